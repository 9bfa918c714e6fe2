"""The viewer served on 127.0.0.1 by the standard library's ``http.server``, in a thread.

Paths (the same ones :mod:`topoeval.view.export` writes): ``/`` the page (``index.html``, ``app.js``,
``style.css``: package data beside this module), ``/data/runs.js``, ``/data/<run>.js``,
``/data/<run>/<chunk>.js`` (see :mod:`topoeval.view.data`) and ``/files/<run>/<picture>.png``, a
PNG the run folder already holds. Nothing else of the disk is reachable: a run is named by its id,
a picture by a name the run's listing holds. It only reads run folders.

A big run opens at once: ``/data/<run>.js`` holds its first :data:`~topoeval.view.data.FIRST`
episodes (``"complete": false`` when there are more), and the page then asks ``/data/<run>/all.js``
for the whole run, read on from there (the export writes every run whole, so its page never asks).
"""

from __future__ import annotations

import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from topoeval.view.data import FIRST, Catalogue, as_script

STATIC = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "style.css": "text/css; charset=utf-8"}
_RUN = re.compile(r"^/data/(r[0-9a-f]{10})\.js$")
_CHUNK = re.compile(r"^/data/(r[0-9a-f]{10})/(\d+)\.js$")
_WHOLE = re.compile(r"^/data/(r[0-9a-f]{10})/all\.js$")
_FILE = re.compile(r"^/files/(r[0-9a-f]{10})/([\w.-]+\.png)$")


def static_file(name: str) -> bytes:
    """One of the page's files, from the package."""
    return (files("topoeval.view") / name).read_bytes()


def _handler(catalogue: Catalogue) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()  # one index build at a time; reads after that are independent

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
            return

        def _send(self, body: bytes, kind: str, status: HTTPStatus = HTTPStatus.OK) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            try:
                body, kind = self._route(path)
            except (KeyError, IndexError, ValueError):
                body, kind = None, ""
            if body is None:
                self._send(b"not found\n", "text/plain; charset=utf-8", HTTPStatus.NOT_FOUND)
            else:
                self._send(body, kind)

        def _route(self, path: str) -> tuple[bytes | None, str]:
            js = "text/javascript; charset=utf-8"
            name = "index.html" if path == "/" else path.lstrip("/")
            if name in STATIC:
                return static_file(name), STATIC[name]
            if path == "/data/runs.js":
                return as_script("runs", catalogue.runs_payload()), js
            if m := _RUN.match(path):  # the first page: the page then asks for the whole run if it is more
                with lock:
                    return as_script(m.group(1), catalogue.run_payload(m.group(1), whole=False)), js
            if m := _WHOLE.match(path):
                with lock:
                    return as_script(m.group(1) + "/all", catalogue.run_payload(m.group(1))), js
            if m := _CHUNK.match(path):
                rid, k = m.group(1), int(m.group(2))
                with lock:
                    catalogue.index(rid)
                return as_script(f"{rid}/{k}", catalogue.chunk_payload(rid, k)), js
            if (m := _FILE.match(path)) and m.group(2) in catalogue.pictures(m.group(1)):
                return (catalogue.runs[m.group(1)] / m.group(2)).read_bytes(), "image/png"
            return None, ""

    return Handler


class Viewer:
    """A running viewer: ``url``, and ``close()`` to stop it."""

    def __init__(self, root: Path, port: int = 0, first: int = FIRST):
        self.catalogue = Catalogue(root, first=first)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self.catalogue))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
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
