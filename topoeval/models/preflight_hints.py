"""What a model's preflight request says when the address, not the model, is wrong (issue 60).

- nothing listens at the address (a refused connection): one line naming it, not a warning and
  half a minute of retries of every episode (:func:`refused_address`);
- an ``--api-base`` that names the endpoint (``.../v1/chat/completions``): topoeval adds the endpoint
  itself (:func:`endpoint_in_base`, checked before any request);
- a 404 from a base without ``/v1`` (:func:`lacks_v1`), or a model name the server does not serve:
  the names it does serve, read from ``GET /v1/models`` (:func:`served_models`).
"""

from __future__ import annotations

import errno
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from topoeval.core.secrets import mask_url

#: Endpoints an --api-base must not end with (topoeval joins them to the base itself).
ENDPOINTS = ("/chat/completions", "/completions", "/responses", "/embeddings", "/models")


def _chain(exc: BaseException | None):
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a refused TCP connection: nothing listens at the address."""
    for e in _chain(exc):
        if isinstance(e, ConnectionRefusedError):
            return True
        os_error = getattr(e, "os_error", None)  # aiohttp's ClientConnectorError
        if isinstance(os_error, OSError) and os_error.errno == errno.ECONNREFUSED:
            return True
        text = str(e)
        if "Connection refused" in text or "ECONNREFUSED" in text or f"[Errno {errno.ECONNREFUSED}]" in text:
            return True
    return False


def refused_address(name: str, api_base: str) -> str:
    """The one line for a refused connection to ``api_base``."""
    parts = urlsplit(api_base)
    where = parts.netloc.rsplit("@", 1)[-1] or api_base
    return (f"model '{name}': nothing answers at {mask_url(api_base)} (connection to {where} refused): start the "
            "server, or check the host and port of --api-base")


def endpoint_in_base(api_base: str) -> str | None:
    """A one-line error when ``api_base`` ends with an endpoint (``/chat/completions``); None when it does not."""
    path = urlsplit(api_base).path.rstrip("/")
    for endpoint in ENDPOINTS:
        if path.endswith(endpoint):
            parts = urlsplit(api_base)
            base = urlunsplit((parts.scheme, parts.netloc, path[: -len(endpoint)], parts.query, ""))
            return (f"--api-base {mask_url(api_base)} ends with the endpoint {endpoint}: give the server's base URL, "
                    f"{mask_url(base)} (topoeval adds {endpoint} itself)")
    return None


def lacks_v1(api_base: str) -> bool:
    """Whether the base's path has no ``/v1`` (OpenAI-compatible servers serve under it)."""
    return "/v1" not in urlsplit(api_base).path


def with_v1(api_base: str) -> str:
    parts = urlsplit(api_base)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/v1", parts.query, ""))


async def served_models(api_base: str, headers: dict[str, str], timeout_s: float = 10.0) -> list[str] | None:
    """The model names the server lists at ``GET {api_base}/models`` (OpenAI's shape: ``{"data": [{"id":
    ...}]}``); None when it does not answer that."""
    import aiohttp

    from topoeval.models.urls import endpoint_url, request_url

    url = endpoint_url(api_base, "/models")
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
            async with session.get(request_url(url), headers=headers) as resp:
                if resp.status != 200:
                    return None
                data: Any = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    names = [str(i["id"]) for i in items if isinstance(i, dict) and isinstance(i.get("id"), (str, int))]
    return names[:50]


def not_served(name: str, model: str, prefix: str, api_base: str, served: list[str] | None) -> str | None:
    """The one line for a 404 on ``model``: the names the server serves (``served``), or a base without /v1;
    None when neither helps (the generic message stands)."""
    if served:
        from topoeval.core.errors import did_you_mean

        pick = did_you_mean(model, served).removeprefix(" (did you mean '").removesuffix("'?)") or served[0]
        return (f"model '{name}': the server at {mask_url(api_base)} does not serve '{model}' (HTTP 404); it serves: "
                f"{', '.join(served)}; name one of them, e.g. -m {prefix}{pick}")
    if lacks_v1(api_base):
        return (f"model '{name}': the server at {mask_url(api_base)} answered HTTP 404; --api-base has no /v1, under "
                f"which OpenAI-compatible servers (vLLM, llama.cpp, SGLang) serve: try --api-base "
                f"{mask_url(with_v1(api_base))}")
    return None
