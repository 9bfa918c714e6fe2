"""Retries: Retry-After honoured (capped), exponential backoff otherwise, give up after max_retries."""

import asyncio

import pytest

from topoeval.models.retry import TransientError, parse_retry_after, with_retries


def test_retry_after_is_honoured_and_capped(monkeypatch):
    waits = []

    async def fake_sleep(s):
        waits.append(s)

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    calls = {"n": 0}

    async def flaky():
        calls["n"] += 1
        if calls["n"] == 1:
            raise TransientError("429", retry_after=2.5)
        if calls["n"] == 2:
            raise TransientError("429", retry_after=500)
        if calls["n"] == 3:
            raise TransientError("500")
        return "ok"

    assert asyncio.run(with_retries(flaky, max_retries=5, max_backoff_s=10)) == "ok"
    assert waits[0] == 2.5 and waits[1] == 10  # server's wish, then capped
    assert 0.5 <= waits[2] <= 2.0  # third attempt: exponential backoff 2 s with jitter on its upper half


def test_gives_up_after_max_retries_and_reraises(monkeypatch):
    async def fake_sleep(s):
        pass

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    calls = {"n": 0}

    async def down():
        calls["n"] += 1
        raise TransientError("503")

    with pytest.raises(TransientError):
        asyncio.run(with_retries(down, max_retries=3, max_backoff_s=1))
    assert calls["n"] == 4


def test_other_errors_are_not_retried():
    calls = {"n": 0}

    async def broken():
        calls["n"] += 1
        raise ValueError("bad request")

    with pytest.raises(ValueError):
        asyncio.run(with_retries(broken, max_retries=3, max_backoff_s=1))
    assert calls["n"] == 1


def test_parse_retry_after():
    assert parse_retry_after("3") == 3.0 and parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2026 07:28:00 GMT") is None and parse_retry_after("-1") == 0.0


def test_litellm_errors_are_classified():
    from topoeval.models.litellm_backend import _classify, import_litellm

    litellm = import_litellm()
    rate = litellm.RateLimitError("slow", llm_provider="openai", model="m")
    assert isinstance(_classify(rate), TransientError)
    auth = litellm.AuthenticationError("no", llm_provider="openai", model="m")
    assert _classify(auth) is auth
