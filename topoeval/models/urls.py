"""URLs of an OpenAI-compatible server: an endpoint joined to an ``api_base`` (its query kept at the end), the
user info taken out of a URL and sent as HTTP Basic auth instead. Pure functions of strings, shared by the
``direct:`` path and the preflight's hints (no model code imported)."""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit


def endpoint_url(base: str, endpoint: str) -> str:
    """``endpoint`` (``/chat/completions``) joined to the path of ``base`` (``.../v1``), the base's query kept
    at the end (its user info kept too: :func:`request_url` drops it, :func:`mask_url` masks it)."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/") + "/" + endpoint.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def request_url(url: str) -> str:
    """``url`` without its user info (sent as a header instead: :func:`basic_auth`)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[1], parts.path, parts.query, parts.fragment))


def url_credentials(url: str) -> tuple[str, str] | None:
    """The user and password in ``url``'s user info (percent-decoded); None when it has none."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return None
    return unquote(parts.username or ""), unquote(parts.password or "")


def basic_auth(user: str, password: str) -> str:
    """The ``Authorization`` value of HTTP Basic auth for ``user`` and ``password``."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
