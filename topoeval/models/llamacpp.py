"""A GGUF model run in-process by llama-cpp-python (optional extra ``topoeval[local]``)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.models.llamacpp_format import for_chatml_function_calling
from topoeval.models.llamacpp_tools import complete_with_tools
from topoeval.models.openai_format import message_from_openai
from topoeval.models.options import ModelOptions
from topoeval.models.prompt_tools import prompt_reply, to_prompt_messages
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams

INSTALL_HINT = "pip install 'topoeval[local]'  (llama-cpp-python; it compiles, about 5 minutes on 2 cores)"


def import_llama_cpp():
    try:
        import llama_cpp
    except ImportError:
        raise UserError(f"this model needs llama-cpp-python: {INSTALL_HINT}") from None
    return llama_cpp


#: One model load at a time in this process. ``Llama(verbose=False)`` points fds 1 and 2 at /dev/null
#: while it loads and then restores the fds it saved; two loads in two threads interleave, and the
#: second restores the first's /dev/null — every later print (the run's table) went nowhere.
_LOAD_LOCK = threading.Lock()


class LlamaCppPolicy(Policy):
    """One ``llama_cpp.Llama`` per policy; calls run one at a time in a worker thread.

    Native tool mode uses :mod:`topoeval.models.llamacpp_tools` (grammar-constrained calls, every
    step within the turn's token budget); prompt mode renders tools into the system prompt of a
    plain ChatML conversation and parses ``<tool_call>`` blocks.
    """

    concurrency = 1

    def __init__(self, model_path: str, options: ModelOptions, name: str | None = None, lora_path: str | None = None):
        self.model_path = model_path
        #: a LoRA adapter GGUF applied on top of the model (see :mod:`topoeval.models.adapters`)
        self.lora_path = lora_path
        self.options = options
        self.name = name or os.path.basename(model_path)
        self.tool_mode = "native" if options.tool_mode == "auto" else options.tool_mode
        self._llama = None
        self._lock = asyncio.Lock()
        self._weights: str | None = None

    @property
    def weights(self) -> str | None:
        """The adapter file's sha256 (the base GGUF is fixed by the name; an adapter can be retrained)."""
        if self.lora_path and self._weights is None:
            self._weights = hashlib.sha256(Path(self.lora_path).read_bytes()).hexdigest()
        return self._weights

    def _load(self):
        if self._llama is None:
            llama_cpp = import_llama_cpp()
            with _LOAD_LOCK:
                self._llama = llama_cpp.Llama(
                    model_path=self.model_path, n_ctx=self.options.n_ctx,
                    n_threads=self.options.n_threads or os.cpu_count(), chat_format="chatml", verbose=False,
                    lora_path=self.lora_path,
                )
        return self._llama

    def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], sampling: SamplingParams) -> dict[str, Any]:
        llama = self._load()
        kwargs: dict[str, Any] = dict(
            messages=messages, max_tokens=sampling.max_tokens,
            temperature=self.options.temperature if self.options.temperature is not None else sampling.temperature,
            top_p=self.options.top_p if self.options.top_p is not None else sampling.top_p,
        )
        if sampling.seed is not None:
            kwargs["seed"] = sampling.seed
        if tools:
            return complete_with_tools(llama, tools=tools, **kwargs)
        return llama.create_chat_completion(**kwargs)

    async def act(self, messages, tools, sampling: SamplingParams, ctx: EpisodeContext) -> AssistantMessage:
        native = self.tool_mode == "native"
        send = for_chatml_function_calling(messages) if native else to_prompt_messages(messages, tools)
        started = time.perf_counter()
        async with self._lock:
            response = await asyncio.to_thread(self._complete, send, tools if native else [], sampling)
        reply = message_from_openai(response["choices"][0]["message"], response.get("usage"))
        if not native:
            reply = prompt_reply(reply)
        reply.latency_s = time.perf_counter() - started
        return reply

    async def aclose(self) -> None:
        if self._llama is not None and hasattr(self._llama, "close"):
            self._llama.close()
        self._llama = None
