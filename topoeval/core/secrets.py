"""Credentials masked out of URLs and texts before topoeval records, prints or publishes them.

An ``--api-base`` may carry a credential: ``https://user:token@host/v1`` or a query such as
``?api-key=...``, ``?key=...``, ``?token=...``. :func:`mask_url` replaces the credential with
:data:`MASK` and keeps the rest (scheme, host, port, path), so a record still says which server was
used; :func:`mask_secrets` does it to every URL inside a text (an error message that quotes one).
run.json's ``config``, episode error texts (the ``errors`` column a publish uploads) and the
policies' error messages go through them.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
#: Query parameters that carry a credential (compared lower-case, ``-`` and ``_`` alike).
SECRET_PARAMS = ("key", "apikey", "api_key", "token", "access_token", "auth", "password", "secret", "sig",
                 "signature", "code", "x-api-key")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


def _secret_param(name: str) -> bool:
    norm = name.lower().replace("-", "_")
    return norm in {p.replace("-", "_") for p in SECRET_PARAMS} or norm.endswith(("_key", "_token", "_secret"))


def mask_url(url: str) -> str:
    """``url`` with its user info and credential query values replaced by :data:`MASK`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_secret_param(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _secret_param(k) else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_secrets(text: str) -> str:
    """``text`` with every URL in it passed through :func:`mask_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: mask_url(m.group(0)), text)
