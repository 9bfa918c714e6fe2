"""Shared behaviour of chat-completion backends: tool mode, retries, timing."""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams
from topoeval.core.replies import bound_reply
from topoeval.core.secrets import mask_secrets, remember_secret
from topoeval.formats import ToolFormat, default_format, get_format, resolve_format, suite_format
from topoeval.models.options import ModelOptions
from topoeval.models.retry import PermanentError, with_retries

#: The preflight request: one short turn, no tools, a few tokens.
PREFLIGHT_MESSAGES = [{"role": "user", "content": "Reply with the word OK."}]
PREFLIGHT_SAMPLING = SamplingParams(temperature=0.0, max_tokens=8)


class ChatPolicy(Policy):
    """A backend that sends OpenAI-format chat requests.

    Its tool-call format (:mod:`topoeval.formats`) decides how tools reach the model: ``native``
    sends messages and tools as they are; a prompt format (``hermes``, the ``prompt`` tool mode;
    ``search-r1``, ``react``, ``json``, plug-ins) renders tools into the system prompt and tool
    results as text, and parses calls from the reply. A format other than the backend's default is
    part of the model's name (``MODEL@FORMAT``): another format is another model's cells. A topology
    with a ``tool_format`` transform (a format-shift ladder step) addresses the model in that format
    instead. Transient failures are retried (see :mod:`topoeval.models.retry`).
    """

    def __init__(self, model: str, options: ModelOptions, name: str | None = None):
        self.model = model
        self.options = options
        self.name = name or model
        #: the credentials this policy was given (its API key): masked in every error text, even a server's echo
        self.secrets: list[str] = [options.api_key] if options.api_key else []
        remember_secret(options.api_key)  # and in every text topoeval records or prints from now on
        default = self.default_tool_mode()
        #: the format the model is addressed in (unless a topology shifts it)
        self.format: ToolFormat = resolve_format(options.tool_format, options.tool_mode, default)
        self.tool_mode = "native" if self.format.native else "prompt"
        if self.format.name != default_format(default):
            self.name = f"{self.name}@{self.format.name}"

    @property
    def tool_format(self) -> str:
        """The format's name (run.json and the summary record it per model)."""
        return self.format.name

    def format_for(self, ctx: EpisodeContext | None) -> ToolFormat:
        """The episode's format: its topology's ``tool_format`` transform, else the model's own."""
        shifted = suite_format(ctx.suite) if ctx is not None else None
        return self.format if shifted in (None, self.format.name) else get_format(shifted)

    def mask(self, text: str) -> str:
        """``text`` (an error message, a server's error body) with every credential masked: this policy's
        and every one :func:`topoeval.core.secrets.mask_secrets` knows."""
        return mask_secrets(text, self.secrets)

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
            raise UserError(self.mask(" ".join(f"model '{self.name}': {exc}; {exc.fix}".split()))) from None
        except UserError:
            raise
        except Exception as exc:
            detail = " ".join(self.mask(str(exc)).split())[:200]
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
        fmt = self.format_for(ctx)
        if fmt.native:
            send_messages, send_tools = messages, tools
        else:
            fmt.check(tools)
            send_messages, send_tools = fmt.render(messages, tools), []
        started = time.perf_counter()
        reply = await with_retries(
            lambda: self.complete(send_messages, send_tools, sampling),
            self.options.max_retries, self.options.max_backoff_s,
        )
        limits = self.options.reply_limits
        reply = bound_reply(reply, limits)  # before a format parses the text: nothing unbounded goes further
        if not fmt.native:
            reply = bound_reply(fmt.read_reply(reply, tools), limits)
        reply.latency_s = time.perf_counter() - started
        return reply

    @abstractmethod
    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       sampling: SamplingParams) -> AssistantMessage:
        """One request; raise TransientError for failures worth retrying."""
