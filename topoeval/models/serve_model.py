"""``topoeval serve-model``: a local model served as topoeval runs it, for other tools and for ``direct:``.

A client's ``POST /v1/chat/completions`` goes through the same code as a run's local model
(:meth:`~topoeval.models.llama_server_policy.LlamaServerPolicy.complete_openai`): the call layout the
embedded model's adapters were trained with (the chatml-function-calling prompt, grammar-constrained
calls, an adapter's rationale line), the same llama-server build, slots and prefix states. So
``-m direct:smollm2-135m-wiki --api-base http://127.0.0.1:PORT/v1`` gives the episodes that
``-m smollm2-135m-wiki`` gives (greedy; with ``--slots 1``, the run's own default, token for token), not
those of the model's chat template, in which a trained adapter makes no tool call.

The request's ``model`` names what answers: the base (its name, or ``local``) or an adapter (its name;
a GGUF path's file name without ``.gguf``); ``GET /v1/models`` lists them, and another name is a 404
that lists them. Every other path (``/v1/completions``, ``/completion``, ``/slots``, ...) goes to the
llama-server behind (per-request ``lora``, grammars). Bound to 127.0.0.1; stopped (with the
llama-server's process group) on Ctrl-C or SIGTERM. Every request but ``/health`` needs the API key
(``Authorization: Bearer KEY``): the one given (``--api-key`` or ``$TOPOEVAL_SERVE_API_KEY``), else a
random one, printed at start.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import signal
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.models.llama_server import new_api_key

#: The name the base model also answers to (``direct:local``: what the start-up line used to suggest).
BASE_ALIAS = "local"


def resolve_gguf(model: str) -> str:
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


def served_name(model: str) -> str:
    """The name a client asks for: a model or adapter name as given, a GGUF path's file name without .gguf."""
    from topoeval.models.adapters import BASE_NAME, is_adapter_model

    if model == BASE_NAME or is_adapter_model(model):
        return model
    return Path(model.removeprefix("gguf:")).name.removesuffix(".gguf")


def episode_key(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """Which episode a request continues: the model, the tools and the conversation up to its first assistant
    turn (every later request of an episode starts with them). Its slot and its own KV cache go with it, as in
    a run (:meth:`LlamaServerPolicy._slot_for`)."""
    opening: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "assistant":
            break
        opening.append(m)
    text = json.dumps([model, tools, opening], sort_keys=True, default=str)
    return "served:" + hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def openai_error(status: int, message: str, code: str | None = None) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error", "code": code}}


class ServedModels:
    """The base and its adapters as run policies on one llama-server, answering OpenAI chat requests."""

    def __init__(self, model: str, adapters: list[str], slots: int, n_ctx: int, n_threads: int | None):
        from topoeval.models.llama_server_policy import LlamaServerPolicy
        from topoeval.models.options import ModelOptions

        options = ModelOptions(n_ctx=n_ctx, local_slots=slots, max_retries=2)
        if n_threads is not None:  # else a run's default ($TOPOEVAL_LOCAL_THREADS, or one per core)
            options = options.model_copy(update={"n_threads": n_threads})
        base = resolve_gguf(model)
        self.policies: dict[str, LlamaServerPolicy] = {
            served_name(model): LlamaServerPolicy(base, options, name=served_name(model))}
        for adapter in adapters:
            name = served_name(adapter)
            if name in self.policies:
                raise UserError(f"adapter '{adapter}' is given twice (or has the base's name)")
            self.policies[name] = LlamaServerPolicy(base, options, name=name, lora_path=resolve_gguf(adapter))
        self.aliases = {BASE_ALIAS: served_name(model)}
        #: one turn per slot at a time: a turn is several requests that continue each other in its slot
        self.turns = asyncio.Semaphore(slots)

    def names(self) -> list[str]:
        return [*self.policies, *(a for a in self.aliases if a not in self.policies)]

    def first(self):
        return next(iter(self.policies.values()))

    async def start(self) -> None:
        """Start the llama-server with every adapter (one-line UserError when it refuses its model)."""
        first = self.first()
        await first.shared.ensure(first.lora_path)

    async def chat(self, body: Any) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) of one ``/v1/chat/completions`` request."""
        from topoeval.core.policy import SamplingParams
        from topoeval.models.llama_server_policy import ServerUnavailable
        from topoeval.models.replicas import CURRENT_EPISODE
        from topoeval.models.retry import PermanentError, TransientError, with_retries

        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return openai_error(400, "the body is a JSON object with 'model' and 'messages'")
        name = str(body.get("model") or "")
        policy = self.policies.get(self.aliases.get(name, name))
        if policy is None:
            return openai_error(404, f"The model '{name}' does not exist; this server serves: "
                                     f"{', '.join(self.names())}", "model_not_found")
        tools = body.get("tools") or []
        try:
            sampling = SamplingParams(temperature=body.get("temperature", 0.0), top_p=body.get("top_p", 1.0),
                                      max_tokens=body.get("max_tokens") or body.get("max_completion_tokens") or 1024,
                                      seed=body.get("seed"))
        except ValueError as exc:
            return openai_error(400, " ".join(str(exc).split())[:300])
        token = CURRENT_EPISODE.set(episode_key(name, body["messages"], tools))
        try:
            async with self.turns:
                response = await with_retries(lambda: policy.complete_openai(body["messages"], tools, sampling),
                                              policy.options.max_retries, policy.options.max_backoff_s)
        except PermanentError as exc:
            return openai_error(exc.status or 400, str(exc))
        except (TransientError, ServerUnavailable) as exc:
            return 503, {"error": {"message": str(exc), "type": "server_error", "code": None}}
        except (UserError, RuntimeError, KeyError, TypeError, ValueError) as exc:
            return 500, {"error": {"message": f"{type(exc).__name__}: {exc}"[:500], "type": "server_error"}}
        finally:
            CURRENT_EPISODE.reset(token)
        return 200, {**response, "model": name}

    async def aclose(self) -> None:
        for policy in self.policies.values():
            await policy.aclose()


def make_app(models: ServedModels, api_key: str):
    """The aiohttp application: the key check, /health, /v1/models, /v1/chat/completions, the rest proxied."""
    import aiohttp
    from aiohttp import web

    @web.middleware
    async def owner_only(request: web.Request, handler):
        if request.path != "/health":
            sent = request.headers.get("Authorization", "")
            if not hmac.compare_digest(sent.encode(), f"Bearer {api_key}".encode()):
                return web.json_response({"error": {"message": "Invalid API Key", "type": "authentication_error",
                                                    "code": 401}}, status=401)
        return await handler(request)

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def list_models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": n, "object": "model", "owned_by": "topoeval"}
                                                             for n in models.names()]})

    async def chat(request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())
        except (ValueError, UnicodeDecodeError):
            status, answer = openai_error(400, "the body is not JSON")
        else:
            status, answer = await models.chat(body)
        return web.json_response(answer, status=status)

    async def proxy(request: web.Request) -> web.StreamResponse:
        first = models.first()
        server = await first.shared.ensure(first.lora_path)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=first.options.timeout_s)) as session:
            async with session.request(request.method, server.url + request.path_qs, data=await request.read(),
                                       headers={"Content-Type": request.headers.get("Content-Type",
                                                                                    "application/json"),
                                                **server.headers}) as resp:
                return web.Response(body=await resp.read(), status=resp.status,
                                    content_type=resp.content_type or "application/json")

    app = web.Application(middlewares=[owner_only], client_max_size=64 << 20)
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_route("*", "/{tail:.*}", proxy)
    return app


def start_line(api_base: str, names: list[str], api_key: str | None, generated: str, slots: int) -> str:
    """What serve-model prints once it is ready: the address, the names, the key, the command (``names``:
    the base first, then the adapters)."""
    key = "KEY (the one you gave)" if api_key else generated
    name = names[-1]
    return (f"serving {', '.join(names)} on {api_base} in the call layout topoeval runs them in (slots: {slots}; "
            f"-m direct:NAME gives the episodes -m NAME gives, greedy, with no --tool-format: token for token with "
            f"--slots 1); requests need its API key (Authorization: Bearer {key}); use it with: "
            f"topoeval run PROTOCOL -m direct:{name} --api-base {api_base} --api-key {key}")


def serve(model: str, adapters: list[str], port: int, slots: int, n_ctx: int, n_threads: int | None,
          echo=print, api_key: str | None = None) -> None:
    asyncio.run(_serve(model, adapters, port, slots, n_ctx, n_threads, echo, api_key))


async def _serve(model: str, adapters: list[str], port: int, slots: int, n_ctx: int, n_threads: int | None,
                 echo, api_key: str | None) -> None:
    from aiohttp import web

    key = api_key or new_api_key()
    models = ServedModels(model, adapters, slots, n_ctx, n_threads)
    runner = None
    try:
        await models.start()
        runner = web.AppRunner(make_app(models, key), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", port).start()
        except OSError as exc:
            raise UserError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        server = models.first().shared.server
        echo(start_line(f"http://127.0.0.1:{port}/v1", list(models.policies), api_key, key, slots)
             + (f" (llama-server log {server.log.name})" if server is not None else ""))
        echo("Ctrl-C stops it")
        await stop.wait()
    finally:
        if runner is not None:
            await runner.cleanup()
        await models.aclose()
