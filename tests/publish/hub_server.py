"""A local stand-in for the Hugging Face Hub API, on 127.0.0.1, that records every request.

The real Hub cannot be reached from the test machines, so the upload path is exercised against
this server: it implements the endpoints huggingface_hub calls for ``create_repo``,
``update_repo_settings`` (visibility), ``hf_hub_download`` and ``create_commit`` (regular, non-LFS
uploads), stores committed files in memory, and can fail chosen requests with a 5xx to exercise retries.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeHub:
    def __init__(self):
        self.repos: dict[str, dict[str, bytes]] = {}
        self.visibility: dict[str, str] = {}  # repo -> "public" | "private" (as created, or as its settings set)
        self.requests: list[dict] = []
        self.commits: list[dict] = []
        self.fail_next: list[tuple[str, str, int]] = []  # (method, path regex, status), each used once
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, status, body=b"", headers=None, head=False):
                if isinstance(body, (dict, list)):
                    body, headers = json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})}
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def _handle(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                hub.requests.append({"method": method, "path": path, "auth": self.headers.get("Authorization"),
                                     "body": body})
                for i, (m, pattern, status) in enumerate(hub.fail_next):
                    if m == method and re.search(pattern, path):
                        del hub.fail_next[i]
                        return self._reply(status, {"error": "injected failure"}, head=method == "HEAD")
                if method == "POST" and path == "/api/repos/create":
                    req = json.loads(body)
                    repo = f"{req.get('organization')}/{req['name']}" if req.get("organization") else req["name"]
                    if repo in hub.repos:
                        return self._reply(409, {"error": "You already created this dataset repo", "url": f"{hub.url}/datasets/{repo}"})
                    hub.repos[repo] = {}
                    hub.visibility[repo] = req.get("visibility") or ("private" if req.get("private") else "public")
                    return self._reply(200, {"url": f"{hub.url}/datasets/{repo}"})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/settings", path)
                if method == "PUT" and m:
                    if m.group(1) not in hub.repos:
                        return self._reply(404, {"error": "Repository not found"})
                    settings = json.loads(body)
                    if "visibility" in settings:
                        hub.visibility[m.group(1)] = settings["visibility"]
                    return self._reply(200, {})
                if method == "POST" and path == "/api/validate-yaml":
                    return self._reply(200, {"errors": [], "warnings": []})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/main", path)
                if method == "POST" and m:
                    files = json.loads(body)["files"]
                    return self._reply(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                                        "oid": None} for f in files]})
                m = re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/main", path)
                if method == "POST" and m:
                    lines = [json.loads(line) for line in body.splitlines() if line.strip()]
                    files = {x["value"]["path"]: base64.b64decode(x["value"]["content"]) for x in lines if x["key"] == "file"}
                    hub.repos.setdefault(m.group(1), {}).update(files)
                    oid = hashlib.sha1(body).hexdigest()
                    hub.commits.append({"repo": m.group(1), "files": sorted(files), "oid": oid})
                    return self._reply(200, {"commitUrl": f"{hub.url}/datasets/{m.group(1)}/commit/{oid}", "commitOid": oid})
                m = re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/main/(.+)", path)
                if method in ("HEAD", "GET") and m:
                    data = hub.repos.get(m.group(1), {}).get(m.group(2))
                    if data is None:
                        return self._reply(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"},
                                           head=method == "HEAD")
                    etag = hashlib.sha256(data).hexdigest()
                    headers = {"X-Repo-Commit": "a" * 40, "ETag": f'"{etag}"'}
                    return self._reply(200, data, headers, head=method == "HEAD")
                return self._reply(404, {"error": f"no route {method} {path}"})

            def do_GET(self):
                self._handle("GET")

            def do_HEAD(self):
                self._handle("HEAD")

            def do_POST(self):
                self._handle("POST")

            def do_PUT(self):
                self._handle("PUT")

        return Handler
