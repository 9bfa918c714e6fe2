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

    #: whether topoeval starts the server itself (a local model): its address is none of the user's
    serves_itself = False

    def __init__(self, model: str, options: ModelOptions, name: str | None = None):
        from topoeval.models.preflight_hints import endpoint_in_base

        for base in [*options.api_bases, *([options.api_base] if options.api_base else [])]:
            if (wrong := endpoint_in_base(base)) is not None:
                raise UserError(wrong)
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
        from topoeval.models.preflight_hints import is_refused, refused_address

        address = self.options.api_base if not self.serves_itself else None
        try:
            await self.complete(PREFLIGHT_MESSAGES, [], PREFLIGHT_SAMPLING)
        except PermanentError as exc:
            hint = await self._not_served_hint() if exc.status == 404 and address else None
            raise UserError(self.mask(" ".join((hint or f"model '{self.name}': {exc}; {exc.fix}").split()))) from None
        except UserError:
            raise
        except Exception as exc:
            if address and len(self.options.api_bases) <= 1 and is_refused(exc):  # nothing to retry: a wrong address
                raise UserError(self.mask(refused_address(self.name, address))) from None
            detail = " ".join(self.mask(str(exc)).split())[:200]
            return (f"model '{self.name}': the preflight request failed ({type(exc).__name__}: {detail}); "
                    "its episodes retry, and those that still fail are recorded as errors")
        return None

    def served_name(self) -> tuple[str, str]:
        """(the prefix of the model string, the name the server is asked for): ``openai/`` and ``NAME``."""
        prefix, _, served = self.model.partition("/")
        return (prefix + "/", served) if served else ("", self.model)

    async def _not_served_hint(self) -> str | None:
        """The one line for a 404 at preflight: the names the server serves (GET /v1/models), or a base
        without /v1; None when neither is known."""
        from topoeval.models.preflight_hints import not_served, served_models

        assert self.options.api_base is not None
        prefix, served = self.served_name()
        headers = {"Authorization": f"Bearer {self.options.api_key}"} if self.options.api_key else {}
        names = await served_models(self.options.api_base, headers, min(self.options.timeout_s, 10.0))
        return not_served(self.name, served, prefix, self.options.api_base, names)

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
