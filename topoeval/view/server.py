"""The viewer served on 127.0.0.1 by the standard library's ``http.server``, in a thread, private to
whoever started it.

Paths: ``/`` the page (``index.html``, ``app.js``, ``flips.js``, ``statediff.js``, ``style.css``: package data
beside this module), ``/data/runs.json``, ``/data/<run>.json``, ``/data/<run>/<chunk>.json``,
``/data/<run>/all.json``, ``/data/<run>/flips/<cell>.json`` (see :mod:`topoeval.view.data`) and
``/files/<run>/<picture>.png``, a PNG the run folder holds as a regular file.
Nothing else of the disk is reachable: a run is named by its id, a picture by a name the run's
listing holds, and no symlink is followed. It only reads run folders.

Who may read (like Jupyter's token): each launch draws a random token (:attr:`Viewer.token`), in the
URL it prints and opens (``http://127.0.0.1:PORT/?token=...``). The page requested with that token
gets the page and a cookie (HttpOnly, SameSite=Strict, Path=/, named after the port); every data and
file request, and the page itself, needs the token (that cookie, or the ``X-Topoeval-Token`` header the
page sends; compared in constant time), else 403. Only ``app.js``, ``flips.js``, ``statediff.js`` and
``style.css`` are public. Every request needs ``Host: 127.0.0.1:PORT`` or ``localhost:PORT`` (DNS
rebinding), and one with an ``Origin`` other than the viewer's own, or ``Sec-Fetch-Site:
cross-site``/``same-site`` (a page of another local port), gets 403. The data are JSON
(``application/json``, ``nosniff``), which a page of another origin cannot include as a script; the page
(served with a Content-Security-Policy that allows only its own scripts) fetches them.

A big run opens at once: ``/data/<run>.json`` holds its first :data:`~topoeval.view.data.FIRST`
episodes (``"complete": false`` when there are more), and the page then asks ``/data/<run>/all.json``
for the whole run, read on from there (the export writes every run whole, so its page never asks).
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from topoeval.view.data import FIRST, Catalogue, as_json

STATIC = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "flips.js": "text/javascript; charset=utf-8", "statediff.js": "text/javascript; charset=utf-8",
          "style.css": "text/css; charset=utf-8"}
#: the page's files anyone may fetch (they hold no data)
PUBLIC = ("app.js", "flips.js", "statediff.js", "style.css")
#: the header the page sends the token in
TOKEN_HEADER = "X-Topoeval-Token"
JSON = "application/json; charset=utf-8"
_RUN = re.compile(r"^/data/(r[0-9a-f]{10})\.json$")
_CHUNK = re.compile(r"^/data/(r[0-9a-f]{10})/(\d{1,9})\.json$")
_WHOLE = re.compile(r"^/data/(r[0-9a-f]{10})/all\.json$")
_FLIPS = re.compile(r"^/data/(r[0-9a-f]{10})/flips/(\d{1,9})\.json$")
_FILE = re.compile(r"^/files/(r[0-9a-f]{10})/([\w.-]+\.png)$")
#: every answer's headers: no sniffing, no caching, no framing, no loading by another origin, no referrer
#: (the page's URL holds the token)
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin", "Referrer-Policy": "no-referrer",
}
#: the page may run its own script only, fetch and show images from its own origin only
PAGE_POLICY = ("default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self'; "
               "style-src 'self' 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def static_file(name: str) -> bytes:
    """One of the page's files, from the package."""
    return (files("topoeval.view") / name).read_bytes()


def cookie_name(port: int) -> str:
    """The token cookie's name: one per port (a browser shares cookies across the ports of one host)."""
    return f"topoeval-view-{port}"


def _handler(catalogue: Catalogue, token: str, port: int) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()  # one index build at a time; reads after that are independent
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    origins = {f"http://{h}" for h in hosts}
    cookie = cookie_name(port)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
            return

        def _send(self, body: bytes, kind: str, status: HTTPStatus = HTTPStatus.OK,
                  extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for name, value in {**SECURITY_HEADERS, **(extra or {})}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, why: str) -> None:
            self._send(f"forbidden: {why}\n".encode(), "text/plain; charset=utf-8", HTTPStatus.FORBIDDEN)

        def _foreign(self) -> str | None:
            """Why this request does not come from the viewer's own page on this machine (None: it may)."""
            if self.headers.get("Host") not in hosts:
                return "wrong Host (the viewer answers 127.0.0.1 and localhost at its port only)"
            origin = self.headers.get("Origin")
            if origin is not None and origin not in origins:
                return "a request from another origin"
            if self.headers.get("Sec-Fetch-Site") in ("cross-site", "same-site"):
                return "a request from another site"
            return None

        def _has_token(self, query: str) -> tuple[bool, bool]:
            """(whether the request carries the token, whether it came in the URL)."""
            given = parse_qs(query).get("token", [])
            if any(hmac.compare_digest(t.encode(), token.encode()) for t in given):
                return True, True
            header = self.headers.get(TOKEN_HEADER)
            if header is not None and hmac.compare_digest(header.encode(), token.encode()):
                return True, False
            # each name=value of every Cookie header (other apps on 127.0.0.1 may set cookies that a strict
            # parser would stop at)
            values = [v.strip() for h in self.headers.get_all("Cookie") or [] for v in h.split(";")]
            mine = [v.partition("=")[2] for v in values if v.partition("=")[0] == cookie]
            return any(hmac.compare_digest(v.encode(), token.encode()) for v in mine), False

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            path = parts.path
            if why := self._foreign():
                return self._refuse(why)
            name = path.lstrip("/")
            if name in PUBLIC:
                return self._send(static_file(name), STATIC[name])
            allowed, in_url = self._has_token(parts.query)
            if not allowed:
                return self._refuse("no valid token (open the URL `topoeval view` printed)")
            if path in ("/", "/index.html"):
                extra = {"Content-Security-Policy": PAGE_POLICY}
                if in_url:
                    extra["Set-Cookie"] = f"{cookie}={token}; HttpOnly; SameSite=Strict; Path=/"
                return self._send(static_file("index.html"), STATIC["index.html"], extra=extra)
            try:
                body, kind = self._route(path)
            except (KeyError, IndexError, ValueError):
                body, kind = None, ""
            if body is None:
                self._send(b"not found\n", "text/plain; charset=utf-8", HTTPStatus.NOT_FOUND)
            else:
                self._send(body, kind)

        def _route(self, path: str) -> tuple[bytes | None, str]:
            if path == "/data/runs.json":
                return as_json(catalogue.runs_payload()), JSON
            if m := _RUN.match(path):  # the first page: the page then asks for the whole run if it is more
                with lock:
                    return as_json(catalogue.run_payload(m.group(1), whole=False)), JSON
            if m := _WHOLE.match(path):
                with lock:
                    return as_json(catalogue.run_payload(m.group(1))), JSON
            if m := _CHUNK.match(path):
                rid, k = m.group(1), int(m.group(2))
                with lock:
                    catalogue.index(rid)
                return as_json(catalogue.chunk_payload(rid, k)), JSON
            if m := _FLIPS.match(path):  # a cell's "what flipped" page: from the whole run
                with lock:
                    return as_json(catalogue.flips_payload(m.group(1), int(m.group(2)))), JSON
            if (m := _FILE.match(path)) and m.group(1) in catalogue.runs:
                return catalogue.picture(m.group(1), m.group(2)), "image/png"
            return None, ""

    return Handler


class Viewer:
    """A running viewer: ``url`` (with its token: the one to open), ``base`` (without), ``token``, and
    ``close()`` to stop it."""

    def __init__(self, root: Path, port: int = 0, first: int = FIRST):
        self.catalogue = Catalogue(root, first=first)
        self.token = secrets.token_urlsafe(32)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), BaseHTTPRequestHandler)
        self.port = int(self.httpd.server_address[1])
        self.httpd.RequestHandlerClass = _handler(self.catalogue, self.token, self.port)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.port}/"
        self.url = f"{self.base}?token={self.token}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="topoeval-view", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
