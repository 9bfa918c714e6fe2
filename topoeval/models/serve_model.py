"""``topoeval serve-model``: the llama-server topoeval runs, started by hand for other tools.

The same portable build, the same flags as in a run (slots, split context, LoRA adapters selected
per request), plus ``--jinja`` so that ``/v1/chat/completions`` takes OpenAI tool definitions with the
model's own chat template. Bound to 127.0.0.1; stopped (with its process group) on Ctrl-C or SIGTERM.
Every request but ``/health`` needs its API key (``Authorization: Bearer KEY``): the one given
(``--api-key`` or ``$TOPOEVAL_SERVE_API_KEY``), else a random one, printed at start.
"""

from __future__ import annotations

import signal
import threading

from topoeval.core.errors import UserError
from topoeval.models.llama_server import LlamaServer, ServerDied


def resolve_gguf(model: str) -> str:
    from pathlib import Path

    from topoeval.models.adapters import BASE_NAME, adapter_path, is_adapter_model
    from topoeval.models.embedded import embedded_gguf

    if model == BASE_NAME:
        return embedded_gguf()
    if is_adapter_model(model):
        return adapter_path(model)
    path = model.removeprefix("gguf:")
    if not Path(path).is_file():
        raise UserError(f"'{model}' is neither {BASE_NAME}, a shipped adapter, nor a GGUF file")
    return path


def serve(model: str, adapters: list[str], port: int, slots: int, n_ctx: int, n_threads: int | None,
          echo=print, api_key: str | None = None) -> None:
    from topoeval.models.llamacpp_build import server_binary

    loras = [resolve_gguf(a) for a in adapters]
    try:
        server = LlamaServer(server_binary(), resolve_gguf(model), loras, slots=slots, n_ctx=n_ctx, n_threads=n_threads,
                             port=port, extra_args=("--jinja",), api_key=api_key)
    except ServerDied as exc:
        raise UserError(f"llama-server {exc}") from None
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    key = "KEY (the one you gave)" if api_key else server.api_key
    echo(f"llama-server on {server.api_base} ({slots} slots; log {server.log.name}); requests need its API key "
         f"(Authorization: Bearer {key}); use it with: topoeval run PROTOCOL -m direct:local "
         f"--api-base {server.api_base} --api-key {key}")
    for i, name in enumerate(adapters):
        echo(f'  adapter {i}: {name} — per request: "lora": [{{"id": {i}, "scale": 1.0}}]')
    echo("Ctrl-C stops it")
    try:
        while not stop.wait(0.5):
            died = server.death()
            if died is not None:
                raise UserError(f"llama-server {died}")
    finally:
        server.stop()
