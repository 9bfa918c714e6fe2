"""Shared behaviour of chat-completion backends: tool mode, retries, timing."""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.models.options import ModelOptions
from topoeval.models.prompt_tools import prompt_reply, to_prompt_messages
from topoeval.models.retry import PermanentError, with_retries
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams

#: The preflight request: one short turn, no tools, a few tokens.
PREFLIGHT_MESSAGES = [{"role": "user", "content": "Reply with the word OK."}]
PREFLIGHT_SAMPLING = SamplingParams(temperature=0.0, max_tokens=8)


class ChatPolicy(Policy):
    """A backend that sends OpenAI-format chat requests.

    In ``native`` tool mode messages and tools go to the backend as they are; in ``prompt`` mode
    tools are rendered into the system prompt, tool results are sent back as text and calls are
    parsed from the reply. Transient failures are retried (see :mod:`topoeval.models.retry`).
    """

    def __init__(self, model: str, options: ModelOptions, name: str | None = None):
        self.model = model
        self.options = options
        self.name = name or model
        self.tool_mode = options.tool_mode if options.tool_mode != "auto" else self.default_tool_mode()

    def default_tool_mode(self) -> str:
        return "native"

    def key_hint(self) -> str:
        """How to give this backend its API key (the fix printed for rejected credentials)."""
        return "pass --api-key (or the key the server expects)"

    async def preflight(self) -> str | None:
        """One request, not retried: :class:`PermanentError` becomes a one-line UserError naming the
        model and the fix; any other failure is returned as a warning (the episodes retry it)."""
        try:
            await self.complete(PREFLIGHT_MESSAGES, [], PREFLIGHT_SAMPLING)
        except PermanentError as exc:
            raise UserError(" ".join(f"model '{self.name}': {exc}; {exc.fix}".split())) from None
        except UserError:
            raise
        except Exception as exc:
            detail = " ".join(str(exc).split())[:200]
            return (f"model '{self.name}': the preflight request failed ({type(exc).__name__}: {detail}); "
                    "its episodes retry, and those that still fail are recorded as errors")
        return None

    def sampling_args(self, sampling: SamplingParams) -> dict[str, Any]:
        args: dict[str, Any] = {
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.seed is not None:
            args["seed"] = sampling.seed
        return args

    async def act(self, messages, tools, sampling: SamplingParams, ctx: EpisodeContext) -> AssistantMessage:
        native = self.tool_mode == "native"
        send_messages = messages if native else to_prompt_messages(messages, tools)
        send_tools = tools if native else []
        started = time.perf_counter()
        reply = await with_retries(
            lambda: self.complete(send_messages, send_tools, sampling),
            self.options.max_retries, self.options.max_backoff_s,
        )
        if not native:
            reply = prompt_reply(reply)
        reply.latency_s = time.perf_counter() - started
        return reply

    @abstractmethod
    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], sampling: SamplingParams) -> AssistantMessage:
        """One request; raise TransientError for failures worth retrying."""
