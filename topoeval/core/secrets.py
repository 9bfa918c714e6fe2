"""Credentials masked out of URLs, texts and command lines before topoeval records, prints or publishes them:
the one masker of every command line, URL and error body topoeval writes or prints.

- :func:`mask_url` — an ``--api-base`` may carry a credential: ``https://user:token@host/v1`` or a query
  such as ``?api-key=...``, ``?access_token=...``, ``?password=...``. The credential becomes :data:`MASK`
  and the rest (scheme, host, port, path) stays, so a record still says which server was used.
- :func:`mask_secrets` — a text (an error message, a server's error body): every URL in it through
  :func:`mask_url`; the value after a credential's name (``Authorization: Bearer ...``, ``api_key=...``,
  ``"api_key": "..."``, ``password: ...``); words shaped like a provider's key (``sk-...``, ``hf_...``,
  ``AIza...``, ...); and every value :func:`remember_secret` was given (the run's ``--api-key``) or the
  call names in ``known``, wherever it appears — a server that echoes the key in its error body.
- :func:`mask_command` — a command line (run.lock's record): ``--api-key VALUE``, ``--api-key=VALUE`` and
  any ``--...-token``/``--password``/``--secret``-like flag, ``NAME=VALUE`` words whose name says
  credential (``OPENAI_API_KEY=...``), and each word through :func:`mask_secrets`.

run.json's ``config``, run.lock, episode error texts (the ``errors`` column a publish uploads), the
CLI's error line and the policies' error messages go through them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
#: Query parameters that carry a credential (compared lower-case, ``-`` and ``_`` alike).
SECRET_PARAMS = ("key", "apikey", "api_key", "token", "access_token", "auth", "password", "secret", "sig",
                 "signature", "code", "x-api-key")
#: A known secret shorter than this is not searched for in texts (masking every "k" would ruin them);
#: it is still masked where a flag or a name says it is one.
MIN_KNOWN_CHARS = 8

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
#: The last word of a name that says its value is a credential (``api_key``, ``x-api-key``, ``auth_token``,
#: ``Authorization``, ``password``); ``max_tokens`` is not one (a name ending in "tokens").
_SECRET_NAME = (r"(?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key|token"
                r"|secret|password|passwd|pwd|auth|authorization|credentials?)")
#: ``NAME: VALUE``, ``NAME=VALUE``, ``"NAME": "VALUE"`` (the value may start with an auth scheme).
_NAMED_VALUE = re.compile(
    rf"(?<![\w-])(?P<name>{_SECRET_NAME})(?P<close>\\?[\"']?)(?P<sep>\s*[:=]\s*)"
    r"(?P<scheme>(?:\\?[\"'])?(?:Bearer|Basic|Token)\s+|\\?[\"'])?"
    r"(?P<value>[^\s\"'\\,;&<>(){}\[\]]+)", re.I)
_BEARER = re.compile(r"\b(?P<scheme>Bearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{6,})")
#: Words shaped like a provider's key: OpenAI/Anthropic ``sk-``, Stripe-like ``sk_live_``, Hugging Face
#: ``hf_``, Groq ``gsk_``, xAI ``xai-``, GitHub ``ghp_``/``github_pat_``, Google ``AIza``, AWS ``AKIA``,
#: Slack ``xox?-``, and JWTs.
_KEY_SHAPE = re.compile(
    r"(?<![\w-])(?:sk-[A-Za-z0-9_-]{16,}|sk_(?:live|test)_[A-Za-z0-9]{16,}|hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{20,}"
    r"|xai-[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|AIza[0-9A-Za-z_-]{35}"
    r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})")
#: A flag whose value is a credential: ``--api-key``, ``--hf-token``, ``--password``, ``--secret``, ...
_SECRET_FLAG = re.compile(rf"^(--?{_SECRET_NAME})(=.*)?$", re.I)
#: An environment-like word whose name says credential: ``OPENAI_API_KEY=...``, ``HF_TOKEN=...``.
_SECRET_ENV = re.compile(
    r"^((?:[A-Za-z0-9]+_)*(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|AUTH|CREDENTIALS?))=(.+)$", re.I)

#: The secrets this process was given (the run's ``--api-key``): masked in every text, wherever they appear.
_KNOWN: set[str] = set()


def remember_secret(value: str | None) -> None:
    """Mask ``value`` (an API key this process was given) in every text :func:`mask_secrets` masks from now on."""
    if value and len(value) >= MIN_KNOWN_CHARS:
        _KNOWN.add(value)


def _secret_param(name: str) -> bool:
    norm = name.lower().replace("-", "_")
    return norm in {p.replace("-", "_") for p in SECRET_PARAMS} or norm.endswith(("_key", "_token", "_secret"))


def _mask_pairs(text: str) -> str:
    if "=" not in text:
        return text
    pairs = parse_qsl(text, keep_blank_values=True)
    if not any(_secret_param(k) for k, _ in pairs):
        return text
    return urlencode([(k, MASK if _secret_param(k) else v) for k, v in pairs], safe="*")


def mask_url(url: str) -> str:
    """``url`` with its user info and credential query (or fragment) values replaced by :data:`MASK`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query, fragment = _mask_pairs(parts.query), _mask_pairs(parts.fragment)  # #access_token=... (OAuth)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _named(match: re.Match[str]) -> str:
    return (f"{match['name']}{match['close']}{match['sep']}{match['scheme'] or ''}{MASK}"
            if match["value"] != MASK else match.group(0))


def mask_secrets(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` with every credential in it replaced by :data:`MASK` (the module docstring says which):
    the values in ``known`` and those remembered, URLs' credentials, named values, key-shaped words."""
    if not text:
        return text
    for secret in sorted({s for s in (*_KNOWN, *known) if s and len(s) >= MIN_KNOWN_CHARS}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    if "://" in text:
        text = _URL.sub(lambda m: mask_url(m.group(0)), text)
    text = _NAMED_VALUE.sub(_named, text)
    text = _BEARER.sub(lambda m: m["scheme"] + MASK if m["value"] != MASK else m.group(0), text)
    return _KEY_SHAPE.sub(MASK, text)


def mask_command(argv: list[str], known: Iterable[str | None] = ()) -> list[str]:
    """``argv`` as it may be recorded or printed: the value of a credential flag (``--api-key VALUE``,
    ``--api-key=VALUE``, ``--hf-token``, ``--password``, ...) and of a credential-named ``NAME=VALUE``
    word replaced by :data:`MASK`, and every word through :func:`mask_secrets`."""
    masked, hide = [], False
    for word in argv:
        if hide:
            masked.append(MASK)
            hide = False
            continue
        flag = _SECRET_FLAG.match(word)
        if flag:
            masked.append(f"{flag.group(1)}={MASK}" if flag.group(2) is not None else word)
            hide = flag.group(2) is None
            continue
        env = _SECRET_ENV.match(word)
        if env and "://" not in env.group(1):
            masked.append(f"{env.group(1)}={MASK}")
            continue
        masked.append(mask_secrets(word, known))
    return masked
