"""The lean path to OpenAI-compatible servers (vLLM, SGLang, llama.cpp server, any --api-base).

One pooled aiohttp session with keep-alive connections; no per-request client set-up. Select it
with a model name ``direct:<served model name>`` and ``--api-base``. Several ``--api-base`` URLs are
replicas of one model: each episode is pinned to one, and moves to another when its replica fails
(:mod:`topoeval.models.replicas`).

A request's URL is the base's path joined with the endpoint (``https://h/v1?api-version=2`` ->
``https://h/v1/chat/completions?api-version=2``: the query stays at the end). Credentials: an explicit
``--api-key`` is sent as ``Authorization: Bearer KEY`` (what vLLM, SGLang and llama.cpp's server check);
user info in the base (``https://user:password@host/v1``) is never sent in the URL: it is sent as HTTP
Basic auth (as curl does) when no ``--api-key`` is given, and dropped when one is (the key wins). Every
error text is masked (:func:`topoeval.core.secrets.mask_secrets`) with the key and the URL's password
known, so a server that echoes them in its error body does not get them printed or recorded.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import EpisodeContext, SamplingParams
from topoeval.core.secrets import mask_url, remember_secret
from topoeval.models.chat_policy import ChatPolicy
from topoeval.models.openai_format import message_from_openai
from topoeval.models.replicas import CURRENT_EPISODE, ReplicaPool, episode_pin
from topoeval.models.retry import (
    NON_RETRYABLE,
    PermanentError,
    TransientError,
    bad_request,
    parse_retry_after,
    permanent_fix,
)
from topoeval.models.urls import basic_auth, endpoint_url, request_url, url_credentials

try:  # orjson when installed: a faster encoder/decoder for the hot path (optional)
    import orjson

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    _loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj).encode()

    _loads = json.loads  # type: ignore[assignment]  # same call shape as orjson.loads


class ResponseTooLarge(RuntimeError):
    """A server's answer longer than ``reply_limits.max_response_bytes`` (or endless): not retried, the
    episode is recorded with status error."""


async def _read_bounded(resp: aiohttp.ClientResponse, limit: int, url: str) -> bytes:
    """The response body, read up to ``limit`` bytes: a longer (or endless) body raises ResponseTooLarge."""
    declared = resp.content_length
    if declared is not None and declared > limit:
        raise ResponseTooLarge(f"response from {url} is {declared} bytes, over reply_limits.max_response_bytes "
                               f"({limit})")
    chunks, size = [], 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(f"response from {url} exceeds reply_limits.max_response_bytes ({limit} bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


class DirectPolicy(ChatPolicy):
    concurrency = 64

    def __init__(self, model, options, name=None):
        if not options.api_base:
            raise UserError(f"model 'direct:{model}' needs an API base, the server's /v1 URL (model_options.api_base; "
                            "--api-base on the command line)")
        super().__init__(model, options, name or f"direct:{model}")
        #: the replicas' base URLs (``.../v1``); requests go to :func:`endpoint_url` of one
        self.replicas = ReplicaPool([u.rstrip("/") for u in options.api_bases or [options.api_base]])
        self.url = self.replicas.urls[0]
        self._session = None
        #: each replica's Basic auth from its URL's user info (sent only when no --api-key is given: the key wins)
        self._url_auth = dict[str, str]()
        for base in self.replicas.urls:
            creds = url_credentials(base)
            if creds is not None:
                self._url_auth[base] = basic_auth(*creds)
                secret = creds[1] or creds[0]  # the password; a lone user name (https://TOKEN@host) is the token
                self.secrets.append(secret)
                remember_secret(secret)

    def served_name(self) -> tuple[str, str]:
        return "direct:", self.model

    def excerpt(self, raw: bytes, limit: int = 200) -> str:
        """The start of a response body for an error text, masked (before it is cut: no key half-shown)."""
        return self.mask(repr(raw[:limit + 1024]))[:limit + 3]

    async def act(self, messages, tools, sampling: SamplingParams, ctx: EpisodeContext) -> AssistantMessage:
        token = CURRENT_EPISODE.set(episode_pin(ctx))  # which replica complete() sends this episode to
        try:
            return await super().act(messages, tools, sampling, ctx)
        finally:
            CURRENT_EPISODE.reset(token)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.options.api_key:
            headers["Authorization"] = f"Bearer {self.options.api_key}"
        return headers

    async def _get_session(self):
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=60, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(total=self.options.timeout_s),
                headers=self._headers(),
            )
        return self._session

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       sampling: SamplingParams) -> AssistantMessage:
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.sampling_args(sampling)}
        if tools:
            body.update(tools=tools, tool_choice="auto")
        data = await self.post_json("/chat/completions", body)
        try:
            return message_from_openai(data["choices"][0]["message"], data.get("usage"))
        except (KeyError, IndexError, TypeError) as exc:
            raise RuntimeError(f"malformed response from {mask_url(self.url)}: "
                               f"{self.mask(str(data)[:1200])[:200]!r}") from exc

    async def post_json(self, endpoint: str, body: dict[str, Any]) -> Any:
        """POST ``body`` to ``endpoint`` (e.g. ``/chat/completions``) of the episode's replica; the
        decoded JSON answer. 408/429/5xx, timeouts and dropped connections raise TransientError."""
        session = self._session if self._session is not None and not self._session.closed else await self._get_session()
        base = self.replicas.pick(CURRENT_EPISODE.get())
        url = endpoint_url(base, endpoint)
        auth = None if self.options.api_key else self._url_auth.get(base)
        try:
            async with session.post(request_url(url), data=_dumps(body),
                                    headers={"Authorization": auth} if auth else None) as resp:
                raw = await _read_bounded(resp, self.options.reply_limits.max_response_bytes, mask_url(url))
                if resp.status >= 500:  # this replica is failing: cool it down, the retry goes to another
                    self.replicas.failed(base)
                if resp.status in (408, 429) or resp.status >= 500:
                    raise TransientError(f"HTTP {resp.status}: {self.excerpt(raw)}",
                                         retry_after=parse_retry_after(resp.headers.get("Retry-After")),
                                         status=resp.status)
                if resp.status >= 400:
                    raise self._refused(resp.status, raw)
        except (TimeoutError, aiohttp.ClientConnectionError) as exc:
            self.replicas.failed(base)
            raise TransientError(self.mask(f"{type(exc).__name__}: {exc}")) from exc
        self.replicas.succeeded(base)
        try:
            return _loads(raw)
        except (ValueError, RecursionError):
            pass
        try:  # invalid UTF-8 or a lone surrogate escape: read what can be read (bound_reply cleans the text)
            return json.loads(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as exc:
            raise RuntimeError(f"malformed response from {mask_url(url)}: {self.excerpt(raw)}") from exc

    def _refused(self, status: int, raw: bytes) -> Exception:
        """A 4xx answer (not 408/429) as the exception the runner and the preflight act on."""
        code = None
        try:
            error = _loads(raw).get("error")
            detail = error.get("message") if isinstance(error, dict) else (error or raw.decode(errors="replace"))
            code = error.get("code") if isinstance(error, dict) else None
        except (ValueError, AttributeError, TypeError):
            detail = raw.decode(errors="replace")
        detail = " ".join(str(detail)[:4000].split())
        if status == 400:  # read by its body, masked in its message
            return bad_request(detail, code if isinstance(code, str) else None,
                               fix=permanent_fix(400, self.key_hint(), self.options.api_base), known=self.secrets)
        detail = self.mask(detail)[:300]
        if status in NON_RETRYABLE:
            return PermanentError(f"{NON_RETRYABLE[status]} (HTTP {status}: {detail})", status=status,
                                  fix=permanent_fix(status, self.key_hint(), self.options.api_base, "direct:"))
        return RuntimeError(f"HTTP {status}: {detail}")

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
