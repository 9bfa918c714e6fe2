"""No reply can stop a run: a real OpenAI-compatible server on 127.0.0.1 answers every request with
one hostile reply (arguments nested past any limit, megabytes of text, a 1 MB tool name, an endless
body, invalid UTF-8, a lone surrogate). The run completes, each episode ends as a recorded invalid
call or an ``error`` episode, and the same command resumes without aborting or re-asking for
finished episodes (their replies are in cache.sqlite)."""

import asyncio
import json

import pytest
from aiohttp import web

import topoeval
from topoeval.core.replies import ReplyLimits
from topoeval.models.options import ModelOptions
from tests.chat_server import ThreadedChatServer

LIMITS = ReplyLimits()


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def _body(content=None, calls=()) -> bytes:
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                             for i, (n, a) in enumerate(calls)]
    return json.dumps({"choices": [{"index": 0, "message": msg}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 5}}).encode()


def _body_with_calls(tool_calls) -> bytes:
    """A reply whose ``tool_calls`` is ``tool_calls`` as it is (a string, an object, a number: not a list)."""
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                            "tool_calls": tool_calls}}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 5}}).encode()


class HostileServer(ThreadedChatServer):
    """Answers the first turn of every episode with the hostile reply ``mode``, later turns with a final answer."""

    def __init__(self, mode: str):
        self.mode, self.requests = mode, 0
        self.start()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("tools"):  # the preflight
            return web.Response(body=_body("OK"), content_type="application/json")
        self.requests += 1
        if any(m["role"] == "assistant" for m in body["messages"]):
            return web.Response(body=_body("done"), content_type="application/json")
        mode = self.mode
        if mode == "endless":
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            await resp.write(b'{"choices": [{"message": {"role": "assistant", "content": "')
            try:
                for _ in range(100_000):  # ~6 GB: endless for the client
                    await resp.write(b"x" * 65536)
                    await asyncio.sleep(0)
            except Exception:  # the client hung up
                pass
            return resp
        raw = {
            "deep_300": lambda: _body(calls=[("lookup", _nested(300))]),
            "deep_100k": lambda: _body(calls=[("lookup", "[" * 100_000 + "]" * 100_000)]),
            "huge_text": lambda: _body("word " * 600_000),
            "huge_name": lambda: _body(calls=[("n" * 1_000_000, "{}")]),
            "invalid_utf8": lambda: _body("answer \udcff").replace(b"\\udcff", b"\xff\xfe"),
            "surrogate": lambda: _body("answer \ud800", calls=[("lookup\ud800", '{"key": "\ud800"}')]),
            "calls_string": lambda: _body_with_calls('[{"name": "lookup", "arguments": {"key": "k1"}}]' * 50),
            "calls_object": lambda: _body_with_calls({"c0": {"name": "lookup"}, "c1": {}, "c2": {}}),
            "calls_number": lambda: _body_with_calls(12345),
        }[mode]()
        return web.Response(body=raw, content_type="application/json")


def _run(out, proto, suites, server):
    options = ModelOptions(api_base=server.api_base, max_retries=0, timeout_s=20)
    return topoeval.run_protocol(proto, ["direct:hostile"], out, suites_dirs=[suites], model_options=options)


def _records(out):
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]


#: mode -> (episode status, what the first call's record must say, or None when the reply has no call)
CASES = {
    "deep_300": ("done", "arguments nest 300 deep, more than the limit of 64"),
    "deep_100k": ("done", "arguments nest 100000 deep"),
    "huge_text": ("done", None),
    "huge_name": ("done", "unknown tool 'nnnn"),
    "endless": ("error", None),
    "invalid_utf8": ("done", None),
    "surrogate": ("done", "unknown tool 'lookup?'"),
    # tool_calls of the wrong type: one invalid call (not one per character, key or digit), then the final answer
    "calls_string": ("done", "unknown tool ''"),
    "calls_object": ("done", "unknown tool ''"),
    "calls_number": ("done", "unknown tool ''"),
}


@pytest.mark.parametrize("mode", list(CASES))
def test_no_reply_stops_a_run_and_a_resume_neither_aborts_nor_asks_again(tmp_path, echo_protocol, fixture_suites,
                                                                          mode):
    server = HostileServer(mode)
    try:
        out, proto = tmp_path / "run", echo_protocol(n=2)
        first = _run(out, proto, fixture_suites, server)
        status, call_error = CASES[mode]
        records = _records(out)
        assert len(records) == 4 and {r["status"] for r in records} == {status}
        for r in records:
            line = json.dumps(r, ensure_ascii=False)
            # nothing unbounded reached the record (it holds a reply twice: in messages, and as calls or the answer)
            assert len(line) < 2 * LIMITS.max_reply_chars + 20_000
            if call_error is not None:
                call = r["calls"][0]
                assert call["status"] == "invalid" and call_error in call["error"]
                assert len(call["name"]) < 400 and len(call["error"]) < 1_000
            if status == "error":
                assert "max_response_bytes" in r["errors"][0]
            if mode.startswith("calls_"):
                assert len(r["calls"]) == 1 and r["scores"]["invalid_calls"] == 1, r["calls"]
        if mode == "huge_text":
            assert all(len(r["final_answer"]) < LIMITS.max_reply_chars + 100 and "cut by topoeval" in r["final_answer"]
                       for r in records)
        if mode == "invalid_utf8":
            assert all("answer" in r["messages"][-1]["content"] for r in records if r["turns"] == 1)
        asked = server.requests
        again = _run(out, proto, fixture_suites, server)  # the same command: replies of finished episodes are cached
        assert again.new_episodes == first.errors and again.reused_episodes == 4 - first.errors
        assert server.requests - asked == first.errors  # only the error episodes are asked again
    finally:
        server.stop()


# (tool_calls of the wrong type are not here: litellm refuses such a response itself, "Invalid response object",
# and the episode is recorded as an error after its retries)
@pytest.mark.parametrize("mode", ["deep_300", "huge_text", "huge_name", "surrogate"])
def test_the_litellm_backend_bounds_hostile_replies_too(tmp_path, echo_protocol, fixture_suites, mode):
    server = HostileServer(mode)
    try:
        out = tmp_path / "run"
        options = ModelOptions(api_base=server.api_base, api_key="sk-test", max_retries=0, timeout_s=20,
                               tool_mode="native")
        res = topoeval.run_protocol(echo_protocol(n=1), ["openai/hostile"], out, suites_dirs=[fixture_suites],
                                    model_options=options)
        assert res.new_episodes == 2 and res.errors == 0
        status, call_error = CASES[mode]
        for r in _records(out):
            assert r["status"] == status and len(json.dumps(r)) < 2 * LIMITS.max_reply_chars + 20_000
            if call_error is not None:
                assert r["calls"][0]["status"] == "invalid" and call_error in r["calls"][0]["error"]
    finally:
        server.stop()
