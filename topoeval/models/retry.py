"""Retrying transient backend failures with tenacity: exponential backoff, jitter, Retry-After."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncio
import random

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

T = TypeVar("T")


class TransientError(Exception):
    """A failure worth retrying (rate limit, server error, timeout, dropped connection)."""

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


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
