"""The direct path's requests, seen by a real local HTTP server (stdlib, 127.0.0.1) that records each
request's path, query and Authorization header: the URL is the base's path joined with the endpoint and
the base's query kept at the end; credentials in the base's URL work alone (HTTP Basic) and beside
``--api-key`` (the key wins, Bearer); and a server whose error body echoes the key gets it neither printed
nor recorded."""

import asyncio
import base64
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from topoeval.core.errors import UserError
from topoeval.core.policy import SamplingParams
from topoeval.models.direct import DirectPolicy, endpoint_url
from topoeval.models.options import ModelOptions

#: The run's --api-key: not shaped like any provider's key, so only knowing it can mask it.
KEY = "topoeval-echo-7f3a9c51"
MESSAGES = [{"role": "user", "content": "Reply with the word OK."}]
OK = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}}],
                 "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()


class Recorder(ThreadingHTTPServer):
    """Records every request; answers OK, or (``status`` set) that status with a body echoing the key sent."""

    def __init__(self, status: int = 200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        super().__init__(("127.0.0.1", port), Handler)
        self.status, self.requests = status, []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        parts = urlsplit(self.path)
        auth = self.headers.get("Authorization") or ""
        self.server.requests.append({"path": parts.path, "query": parts.query, "authorization": auth})
        if self.server.status == 200:
            body = OK
        else:  # what some servers do: quote the key they were given (here without its "Bearer")
            echoed = auth.split(" ", 1)[-1]
            message = f"Incorrect API key provided: {echoed}. You can find your API key in your account."
            body = (json.dumps({"error": {"message": message, "code": "invalid_api_key"}}).encode()
                    if self.server.status < 500 else f"upstream failed for {echoed}".encode())
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    server = Recorder()
    yield server
    server.stop()


def _ask(api_base: str, api_key: str | None = None) -> str | None:
    async def go():
        policy = DirectPolicy("m", ModelOptions(api_base=api_base, api_key=api_key, max_retries=0, timeout_s=10))
        try:
            return (await policy.complete(MESSAGES, [], SamplingParams(max_tokens=4))).content
        finally:
            await policy.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("base,endpoint,url", [
    ("https://h/v1", "/chat/completions", "https://h/v1/chat/completions"),
    ("https://h/v1/", "/chat/completions", "https://h/v1/chat/completions"),
    ("https://h/openai/v1?api-version=2024-02-01", "/chat/completions",
     "https://h/openai/v1/chat/completions?api-version=2024-02-01"),
    ("https://u:p@h:8443/v1?a=1&b=2", "/completions", "https://u:p@h:8443/v1/completions?a=1&b=2"),
])
def test_endpoint_url_joins_the_path_and_keeps_the_query_at_the_end(base, endpoint, url):
    assert endpoint_url(base, endpoint) == url


def test_an_api_base_with_a_query_gets_the_endpoint_in_its_path_and_keeps_its_query(server):
    assert _ask(server.base + "/?api-version=2024-02-01&deployment=x") == "OK"
    assert server.requests == [{"path": "/v1/chat/completions", "query": "api-version=2024-02-01&deployment=x",
                                "authorization": ""}]


def test_url_credentials_alone_are_sent_as_basic_auth_and_not_in_the_url(server):
    base = server.base.replace("http://", "http://alice:s3cr%40t-pass@")
    assert _ask(base + "?v=1") == "OK"
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions" and request["query"] == "v=1"
    assert request["authorization"] == "Basic " + base64.b64encode(b"alice:s3cr@t-pass").decode()


def test_url_credentials_with_an_api_key_work_and_the_key_wins(server):
    base = server.base.replace("http://", "http://alice:url-token-123@")
    assert _ask(base, api_key="sk-explicit") == "OK"
    assert _ask(base.replace("/v1", "/v1?api-version=2"), api_key="sk-explicit") == "OK"
    assert [r["authorization"] for r in server.requests] == ["Bearer sk-explicit"] * 2
    assert [r["query"] for r in server.requests] == ["", "api-version=2"]


@pytest.mark.parametrize("status", [401, 400])
def test_a_refusal_that_echoes_the_key_is_one_line_without_it(tmp_path, echo_protocol, fixture_suites, cli, status):
    server = Recorder(status)
    try:
        proc = cli("run", echo_protocol(n=1), "-m", "direct:m", "--api-base", server.base, "--api-key", KEY,
                   "--max-retries", "0", "--suites-dir", fixture_suites, "--out", tmp_path / "run", "--no-progress")
    finally:
        server.stop()
    assert server.requests and server.requests[0]["authorization"] == f"Bearer {KEY}"  # the server did see it
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Incorrect API key provided: ***" in proc.stderr and KEY not in proc.stdout + proc.stderr


def test_a_server_error_that_echoes_the_key_is_neither_printed_nor_recorded(tmp_path, echo_protocol, fixture_suites,
                                                                             cli):
    server = Recorder(500)
    out = tmp_path / "run"
    try:
        proc = cli("run", echo_protocol(n=1), "-m", "direct:m", "--api-base", server.base, "--api-key", KEY,
                   "--max-retries", "0", "--suites-dir", fixture_suites, "--out", out, "--no-progress")
    finally:
        server.stop()
    assert proc.returncode == 3, proc.stderr  # every episode in error
    assert KEY not in proc.stdout + proc.stderr and "upstream failed for ***" in proc.stderr
    episodes = (out / "episodes.jsonl").read_text()
    assert "HTTP 500" in episodes and "upstream failed for ***" in episodes
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_direct_policy_masks_its_key_in_errors_it_makes(server):
    server.status = 500
    with pytest.raises(Exception) as info:
        _ask(server.base, api_key=KEY)
    assert "HTTP 500" in str(info.value) and KEY not in str(info.value) and "***" in str(info.value)
    server.status = 401
    with pytest.raises(Exception) as info:
        _ask(server.base, api_key=KEY)
    assert not isinstance(info.value, UserError) and KEY not in str(info.value)
