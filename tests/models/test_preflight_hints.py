"""Issue 60: when the address is wrong, the preflight says so in one line (exit 2) before any episode — a refused
connection names the address (no warning and half a minute of retries); an --api-base that names the endpoint is
refused before any request; a `direct:` or `openai/` 404 lists the names the server serves (GET /v1/models), or
says the base lacks /v1. And an open server (no key) is reached through `openai/NAME --api-base` without a key.
Real local HTTP servers."""

import asyncio
import json
import os
import socket
import threading
import time

import pytest
from aiohttp import web

PROTOCOL = """\
name: wiki1
train: {name: wiki, suite: wiki}
test:
  - {name: wiki, role: id, suite: wiki}
tasks:
  test: {n: 1, seed: 1}
limits: {max_turns: 2}
"""


class OpenServer:
    """An OpenAI-compatible server without a key that serves one model, ``real-model``, under ``prefix``."""

    def __init__(self, prefix: str = "/v1"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.prefix, self.auth = prefix, []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def serve():
            asyncio.set_event_loop(self.loop)
            app = web.Application()
            app.router.add_get(prefix + "/models", self.models)
            app.router.add_post(prefix + "/chat/completions", self.chat)
            self.runner = web.AppRunner(app)
            self.loop.run_until_complete(self.runner.setup())
            self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        ready.wait(10)

    async def models(self, request):
        return web.json_response({"object": "list", "data": [{"id": "real-model", "object": "model"}]})

    async def chat(self, request):
        body = await request.json()
        self.auth.append(request.headers.get("Authorization"))
        if body["model"] != "real-model":
            return web.json_response({"error": {"message": f"The model `{body['model']}` does not exist.",
                                                "code": "model_not_found"}}, status=404)
        return web.json_response({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "Paris."}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})

    def base(self, path: str = "/v1") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self):
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def protocol(tmp_path):
    path = tmp_path / "wiki1.yaml"
    path.write_text(PROTOCOL)
    return path


@pytest.fixture
def server():
    s = OpenServer()
    yield s
    s.stop()


def one_line(done) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.mark.parametrize("model", ["direct:m", "openai/m"])
def test_a_refused_connection_at_preflight_is_one_line_naming_the_address(cli, protocol, tmp_path, model):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    done = cli("run", protocol, "-m", model, "--api-base", f"http://127.0.0.1:{port}/v1", "--api-key", "k",
               "--out", tmp_path / "run", "--no-progress")
    line = one_line(done)
    assert line == (f"error: model '{model}': nothing answers at http://127.0.0.1:{port}/v1 (connection to "
                    f"127.0.0.1:{port} refused): start the server, or check the host and port of --api-base")
    assert time.monotonic() - started < 20  # no retries of every episode
    assert not (tmp_path / "run" / "episodes.jsonl").exists() or not (tmp_path / "run" / "episodes.jsonl").read_text()


def test_an_api_base_that_names_the_endpoint_is_refused_before_any_request(cli, protocol, tmp_path, server):
    done = cli("run", protocol, "-m", "direct:real-model", "--api-base", server.base("/v1/chat/completions"),
               "--out", tmp_path / "run", "--no-progress")
    assert one_line(done) == (f"error: --api-base {server.base('/v1/chat/completions')} ends with the endpoint "
                              f"/chat/completions: give the server's base URL, {server.base('/v1')} (topoeval adds "
                              "/chat/completions itself)")
    assert server.auth == []


@pytest.mark.parametrize("model, prefix", [("direct:ckpt", "direct:"), ("openai/ckpt", "openai/")])
def test_a_404_lists_the_names_the_server_serves(cli, protocol, tmp_path, server, model, prefix):
    done = cli("run", protocol, "-m", model, "--api-base", server.base(), "--out", tmp_path / "run", "--no-progress",
               env={"OPENAI_API_KEY": ""})
    assert one_line(done) == (f"error: model '{model}': the server at {server.base()} does not serve 'ckpt' "
                              f"(HTTP 404); it serves: real-model; name one of them, e.g. -m {prefix}real-model")


def test_a_404_from_a_base_without_v1_says_so(cli, protocol, tmp_path, server):
    done = cli("run", protocol, "-m", "direct:real-model", "--api-base", server.base(""), "--out", tmp_path / "run",
               "--no-progress")
    line = one_line(done)
    assert "answered HTTP 404; --api-base has no /v1" in line and f"try --api-base {server.base('/v1')}" in line


def test_an_open_server_needs_no_key_through_litellm(cli, protocol, tmp_path, server, monkeypatch):
    for var in [v for v in os.environ if v.startswith("OPENAI_")]:
        monkeypatch.delenv(var)
    done = cli("run", protocol, "-m", "openai/real-model", "--api-base", server.base(), "--out", tmp_path / "run",
               "--no-progress")
    assert done.returncode == 0, done.stderr
    assert server.auth and set(server.auth) == {"Bearer EMPTY"}  # a placeholder an open server ignores
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [c["n_episodes"] for c in summary["cells"]] == [1]
