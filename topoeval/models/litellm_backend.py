"""Any provider litellm knows (``provider/model``), including OpenAI-compatible servers via ``--api-base``.

Several ``--api-base`` URLs (replicas of one model) go through litellm's Router: its session
affinity keeps an episode on one replica (the episode key is the session id), its cooldowns take a
failing replica out, and our retry path sends the failed request again through the Router.
"""

from __future__ import annotations

import os
from typing import Any

from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import ContextLimitError, EpisodeContext, SamplingParams
from topoeval.core.secrets import mask_secrets
from topoeval.models.chat_policy import ChatPolicy
from topoeval.models.openai_format import message_from_openai
from topoeval.models.replicas import CURRENT_EPISODE, episode_pin
from topoeval.models.retry import (
    CONTEXT_LIMIT,
    MISSING_CREDENTIALS,
    NON_RETRYABLE,
    PermanentError,
    RefusalError,
    TransientError,
    bad_request,
    parse_retry_after,
    permanent_fix,
)

_TRANSIENT_NAMES = {
    "RateLimitError", "InternalServerError", "ServiceUnavailableError", "APIConnectionError", "Timeout",
    "BadGatewayError", "APIError",
}


def import_litellm():
    """litellm, configured never to reach for the network on its own (cost map, telemetry)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


#: The key sent to an OpenAI-compatible server named with --api-base when none is given (and the environment has
#: none): an open server (vLLM, SGLang, llama.cpp without --api-key) ignores it; litellm would refuse to send
#: the request without one.
OPEN_SERVER_KEY = "EMPTY"


class LiteLLMPolicy(ChatPolicy):
    concurrency = 16

    def __init__(self, model, options, name=None):
        self.litellm = import_litellm()
        if options.api_base and not options.api_key and model.startswith("openai/") and not os.environ.get(
                "OPENAI_API_KEY"):
            options = options.model_copy(update={"api_key": OPEN_SERVER_KEY})  # an open server needs no key
        super().__init__(model, options, name)
        self.router = self._router() if len(options.api_bases) > 1 else None

    def _router(self):
        """litellm's Router over the replicas: one deployment per URL, episodes pinned by session id."""
        deployments = [{"model_name": "topoeval-replicas", "litellm_params": {
            "model": self.model, "api_base": url,
            **({"api_key": self.options.api_key} if self.options.api_key else {})}}
            for url in self.options.api_bases]
        return self.litellm.Router(
            model_list=deployments, num_retries=0, allowed_fails=0, cooldown_time=2.0, timeout=self.options.timeout_s,
            optional_pre_call_checks=["session_affinity"], session_affinity_repin_on_failover=True)

    async def act(self, messages, tools, sampling: SamplingParams, ctx: EpisodeContext) -> AssistantMessage:
        if self.router is None:
            return await super().act(messages, tools, sampling, ctx)
        token = CURRENT_EPISODE.set(episode_pin(ctx))  # the Router's session id for this episode
        try:
            return await super().act(messages, tools, sampling, ctx)
        finally:
            CURRENT_EPISODE.reset(token)

    def default_tool_mode(self) -> str:
        """native when litellm says the model supports function calling, or when an OpenAI-compatible
        server is named with --api-base (vLLM, llama.cpp and SGLang servers do); else prompt."""
        try:
            if self.litellm.supports_function_calling(model=self.model):
                return "native"
        except Exception:
            pass
        return "native" if self.options.api_base else "prompt"

    def key_hint(self) -> str:
        """The provider's key variable(s) as litellm knows them, or --api-key."""
        try:
            missing = self.litellm.validate_environment(model=self.model).get("missing_keys") or []
        except Exception:
            missing = []
        if missing:
            return f"set {' / '.join(missing)} or pass --api-key"
        return "pass --api-key (or the provider's key variable)"

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       sampling: SamplingParams) -> AssistantMessage:
        kwargs: dict[str, Any] = dict(
            model=self.model, messages=messages, timeout=self.options.timeout_s, num_retries=0,
            **self.sampling_args(sampling),
        )
        if tools:
            kwargs.update(tools=tools, tool_choice="auto")
        if self.options.api_base:
            kwargs["api_base"] = self.options.api_base
        if self.options.api_key:
            kwargs["api_key"] = self.options.api_key
        try:
            if self.router is not None:
                # the replicas' URL and key are in the Router's deployments (a per-request key would make
                # the Router treat the request as another deployment, and lose the episode's pin)
                kwargs.pop("api_base", None)
                kwargs.pop("api_key", None)
                session = CURRENT_EPISODE.get()
                response = await self.router.acompletion(
                    **{**kwargs, "model": "topoeval-replicas"},
                    **({"metadata": {"session_id": session}} if session else {}))
            else:
                response = await self.litellm.acompletion(**kwargs)
        except Exception as exc:
            raise _classify(exc, self.key_hint, self.options.api_base) from exc
        reply = message_from_openai(response.choices[0].message.model_dump(), _usage(response))
        try:
            reply.cost = float(self.litellm.completion_cost(completion_response=response))
        except Exception:
            reply.cost = None
        return reply


def _usage(response) -> dict[str, Any]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return {}
    return usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)


#: litellm's words for a model name it cannot route to a provider (a 400 raised before any request)
NO_PROVIDER = "LLM Provider NOT provided"
NO_PROVIDER_FIX = ("a model on an OpenAI-compatible server (vLLM, SGLang, llama.cpp, topoeval serve-model): "
                   "-m direct:NAME --api-base URL; or give litellm's provider prefix (openai/NAME, hosted_vllm/NAME, "
                   "anthropic/NAME, ...)")


def _classify(exc: Exception, key_hint=lambda: "pass --api-key", api_base: str | None = None) -> Exception:
    """litellm's exception as TransientError when retrying may help, PermanentError when it cannot,
    ContextLimitError when the conversation outgrew the model, RefusalError when the provider's
    content policy blocked it (a 400 is read by its body: :func:`topoeval.models.retry.bad_request`);
    else unchanged."""
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    name = type(exc).__name__
    raw = " ".join(str(exc).split())
    text = mask_secrets(raw)  # a provider's error body may echo the key (remembered: masked); read unmasked
    if name == "ContextWindowExceededError" or (status == 400 and CONTEXT_LIMIT.search(raw)):
        return ContextLimitError(f"{name}: {text[:300]}")
    if name == "ContentPolicyViolationError":
        return RefusalError(f"{name}: {text[:300]}", detail=text[:300])
    if NO_PROVIDER in raw:  # a bare model name (e.g. a Hugging Face id) litellm cannot route: the user's, not ours
        return PermanentError("litellm cannot tell which provider serves this model name", fix=NO_PROVIDER_FIX)
    if MISSING_CREDENTIALS.search(raw):  # litellm reports a missing key as a 500
        return PermanentError("no API key was given", fix=permanent_fix(None, key_hint()))
    if status == 400:  # read by its body: a refusal, or a request the server rejected
        return bad_request(f"{name}: {text}", fix=permanent_fix(400, key_hint(), api_base))
    if status in NON_RETRYABLE:
        return PermanentError(f"{NON_RETRYABLE[status]} (HTTP {status}, {name}: {text[:200]})", status=status,
                              fix=permanent_fix(status, key_hint(), api_base))
    transient = name in _TRANSIENT_NAMES or status == 429 or (status is not None and status >= 500)
    if status is not None and 400 <= status < 500 and status not in (408, 429):
        transient = False
    if not transient:
        return exc
    headers = (getattr(getattr(exc, "response", None), "headers", None)
               or getattr(exc, "litellm_response_headers", None) or {})
    retry_after = parse_retry_after(headers.get("retry-after") if hasattr(headers, "get") else None)
    return TransientError(f"{name}: {text[:300]}", retry_after=retry_after, status=status)
