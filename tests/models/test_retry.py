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
    from topoeval.core.policy import ContextLimitError
    from topoeval.models.litellm_backend import _classify, import_litellm
    from topoeval.models.retry import PermanentError

    litellm = import_litellm()
    rate = litellm.RateLimitError("slow", llm_provider="openai", model="m")
    assert isinstance(_classify(rate), TransientError)
    assert isinstance(_classify(litellm.InternalServerError("boom", llm_provider="openai", model="m")), TransientError)
    for exc, status in ((litellm.AuthenticationError("no", llm_provider="openai", model="m"), 401),
                        (litellm.PermissionDeniedError("no", llm_provider="openai", model="m",
                                                       response=_response(403)), 403),
                        (litellm.NotFoundError("no such model", llm_provider="openai", model="m"), 404),
                        (litellm.BadRequestError("bad", llm_provider="openai", model="m"), 400)):
        classified = _classify(exc, lambda: "set OPENAI_API_KEY or pass --api-key")
        assert isinstance(classified, PermanentError) and classified.status == status, exc
        assert classified.fix
    # litellm reports a missing key as a 500: still nothing a retry can fix
    missing = litellm.InternalServerError("OpenAIException - Missing credentials. Please pass an `api_key`",
                                          llm_provider="openai", model="m")
    classified = _classify(missing, lambda: "set OPENAI_API_KEY or pass --api-key")
    assert isinstance(classified, PermanentError) and "OPENAI_API_KEY" in classified.fix
    window = litellm.ContextWindowExceededError("This model's maximum context length is 8192 tokens",
                                                llm_provider="openai", model="m")
    assert isinstance(_classify(window), ContextLimitError)
    from topoeval.core.policy import RefusalError
    from topoeval.models.retry import BadRequestError

    blocked = litellm.ContentPolicyViolationError("Your request was rejected as a result of our safety system",
                                                  llm_provider="openai", model="m")
    assert isinstance(_classify(blocked), RefusalError)
    assert type(_classify(litellm.BadRequestError("bad", llm_provider="openai", model="m"))) is BadRequestError


def _response(status):
    import httpx

    return httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))


def test_non_retryable_errors_are_raised_after_one_attempt(monkeypatch):
    from topoeval.models.retry import PermanentError

    calls = {"n": 0}

    async def refused():
        calls["n"] += 1
        raise PermanentError("the credentials were rejected (HTTP 401)", status=401, fix="pass --api-key")

    with pytest.raises(PermanentError):
        asyncio.run(with_retries(refused, max_retries=5, max_backoff_s=1))
    assert calls["n"] == 1


def test_direct_path_classifies_refusals():
    from topoeval.core.policy import ContextLimitError
    from topoeval.models.direct import DirectPolicy
    from topoeval.models.options import ModelOptions
    from topoeval.models.retry import PermanentError

    policy = DirectPolicy("m", ModelOptions(api_base="http://127.0.0.1:9/v1"))
    window = policy._refused(400, b'{"error": {"message": "This model\'s maximum context length is 8192 tokens"}}')
    assert isinstance(window, ContextLimitError)
    for status in (400, 401, 403, 404):
        refused = policy._refused(status, b'{"error": {"message": "no"}}')
        assert isinstance(refused, PermanentError) and refused.status == status and refused.fix
    assert "--api-key" in policy._refused(401, b"{}").fix
    assert type(policy._refused(422, b"not json")) is RuntimeError
