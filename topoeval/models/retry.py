"""Which backend failures to retry, and retrying them with tenacity: exponential backoff, jitter,
Retry-After.

- :class:`TransientError` — worth retrying: 429, 5xx, timeouts, dropped connections.
- :class:`PermanentError` — retrying cannot fix it: a malformed request (400), missing or rejected
  credentials (401, 403, or no key at all), an unknown model or endpoint (404). Never retried; a
  model's preflight request turns it into one line naming the model and the fix.
- a 400 is read by its body (:func:`bad_request`): one that says the conversation outgrew the
  context window is the model's own limit (:class:`topoeval.core.policy.ContextLimitError`); one
  that says the provider's content policy blocked it is the model's refusal
  (:class:`RefusalError`, which the policy turns into the model's answer, scored); any other is a
  request topoeval built and the server rejected (:class:`BadRequestError`): a harness bug, never
  retried, which ends the run with one line naming the request error.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from topoeval.core.errors import UserError
from topoeval.core.policy import ContextLimitError, RefusalError
from topoeval.core.secrets import mask_secrets, mask_url

T = TypeVar("T")


class TransientError(Exception):
    """A failure worth retrying (rate limit, server error, timeout, dropped connection)."""

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class PermanentError(Exception):
    """A failure retrying cannot fix (HTTP 400, 401, 403, 404, or no credentials at all)."""

    def __init__(self, message: str, status: int | None = None, fix: str = ""):
        super().__init__(message)
        self.status = status
        #: what the user should change, e.g. "set OPENAI_API_KEY or pass --api-key"
        self.fix = fix


class BadRequestError(PermanentError, UserError):
    """An HTTP 400 that is neither a context overflow nor a content-policy refusal: a request
    topoeval built was rejected — a harness bug, or a server that does not take this request.
    Never retried; being a :class:`UserError`, it ends the run with its one line (finished
    episodes are kept) instead of being recorded as an infrastructure error to retry."""


#: HTTP statuses never retried, and what each says about the request.
NON_RETRYABLE = {400: "the request was rejected as malformed", 401: "the credentials were rejected",
                 403: "the credentials were refused access", 404: "the model or endpoint was not found"}
#: How providers say that no key was given at all (litellm reports it as a 500).
MISSING_CREDENTIALS = re.compile(
    r"missing credentials|api[ _]?key client option must be set|missing [\w ]*api[ _]?key|no api[ _]?key", re.I)
#: How servers say that the conversation outgrew the context window (OpenAI, vLLM, llama.cpp, SGLang;
#: llama-server: "request (11879 tokens) exceeds the available context size (8192 tokens)").
CONTEXT_LIMIT = re.compile(
    r"context[ _]?(length|window|size)|maximum context|exceeds? the (available )?(context|maximum)"
    r"|prompt is too long|too many tokens", re.I)


#: How providers say their content policy blocked a request or its reply: OpenAI (code
#: content_policy_violation, "our safety system"), Azure OpenAI (code content_filter, "content management
#: policy"), litellm's ContentPolicyViolationError, moderation layers in front of vLLM.
CONTENT_POLICY = re.compile(
    r"content[ _-]?(policy|filter|management)|safety system|ContentPolicyViolation|flagged by (the )?moderation", re.I)
#: Error codes in an OpenAI-style body that mean the same.
CONTENT_POLICY_CODES = frozenset({"content_policy_violation", "content_filter", "content_filtered"})


#: What a rejected request's one line ends with.
BAD_REQUEST_REPORT = "if the request is right, it is a topoeval bug: please report it with the run folder"


def bad_request(detail: str, code: str | None = None, fix: str = "", known: Iterable[str] = ()) -> Exception:
    """An HTTP 400 by its body: ContextLimitError (the model's limit), RefusalError (its refusal),
    or BadRequestError (a rejected request: one line, never retried). The body is read as it is; the
    message holds it masked (:func:`topoeval.core.secrets.mask_secrets`, ``known``: the caller's keys)."""
    raw = " ".join(str(detail).split())
    detail = mask_secrets(raw, known)
    if CONTEXT_LIMIT.search(raw):
        return ContextLimitError(f"HTTP 400: {detail[:300]}")
    if (code or "").lower() in CONTENT_POLICY_CODES or CONTENT_POLICY.search(raw):
        return RefusalError(f"HTTP 400: {detail[:300]}", detail=detail[:300])
    fix = f"{fix}; " if fix else ""
    return BadRequestError(f"the server rejected a request topoeval built (HTTP 400: {detail[:200]}), not retried: "
                           f"{fix}{BAD_REQUEST_REPORT}", status=400, fix=BAD_REQUEST_REPORT)


def permanent_fix(status: int | None, key_hint: str, api_base: str | None = None, prefix: str = "openai/") -> str:
    """The fix to print for a :class:`PermanentError` of ``status`` (None: no credentials given); ``prefix``: the
    model string's prefix before the served name (``openai/``, ``direct:``)."""
    if status in (None, 401, 403):
        return f"check the API key: {key_hint}"
    if status == 404:
        where = f" and that the server at {mask_url(api_base)} serves it" if api_base else ""
        what = "the provider prefix" if prefix.endswith("/") else prefix
        return f"check the model name{where} (the served name goes after {what}, e.g. {prefix}NAME)"
    return ("check that --api-base is the server's OpenAI-compatible /v1 URL and that the model takes this request "
            "(--tool-mode prompt for servers without function calling)")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form; HTTP dates are ignored)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class _Wait:
    """Retry-After when the server gave one (capped), else exponential backoff with jitter."""

    def __init__(self, max_backoff_s: float, base_s: float = 0.5, first_attempt: int = 1):
        self.max_backoff_s = max_backoff_s
        self.base_s = base_s
        self.offset = first_attempt - 1  # attempts made before tenacity took over

    def wait(self, exc: BaseException | None, attempt: int) -> float:
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_backoff_s)
        backoff = self.base_s * 2 ** (attempt - 1)
        return min(self.max_backoff_s, backoff) * random.uniform(0.5, 1.0)  # jitter on the upper half

    def first(self, exc: BaseException) -> float:
        return self.wait(exc, 1)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        return self.wait(exc, state.attempt_number + self.offset)


async def with_retries(call: Callable[[], Awaitable[T]], max_retries: int, max_backoff_s: float) -> T:
    """Run ``call``; retry :class:`TransientError` up to ``max_retries`` times, then re-raise it.

    The first attempt runs bare: tenacity's machinery is only set up once something failed, so the
    common path costs nothing extra.
    """
    try:
        return await call()
    except TransientError as exc:
        if max_retries <= 0:
            raise
        first_wait = _Wait(max_backoff_s).first(exc)
    await asyncio.sleep(first_wait)
    async for attempt in AsyncRetrying(
        retry=retry_if_exception_type(TransientError),
        stop=stop_after_attempt(max_retries),
        wait=_Wait(max_backoff_s, first_attempt=2),
        reraise=True,
    ):
        with attempt:
            return await call()
    raise AssertionError("unreachable")
