"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the backend tests.

It plays one scripted behaviour per task (chosen by the task's prompt): good tool calls,
malformed ones, 429 with Retry-After, 500s, stalls, and a server that never recovers. Whole-server
faults: ``status_all`` answers every request with that HTTP status (401 rejected key, 500 down),
``served_model`` answers 404 for any other model name, as OpenAI and vLLM do. It runs
aiohttp in a background thread with its own event loop; nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict

from aiohttp import web

from tests.chat_server import ThreadedChatServer

MODES = ("good", "bad_json", "unknown_tool", "wrong_type", "rate_limited", "server_error", "stall", "always_500")
#: HTTP 400 answers to the first request of a task, by the body hosted APIs send (not in MODES: a
#: rejected request ends a run, so the tests that cycle through MODES do not get them).
BAD_REQUESTS = {
    "context_overflow": {"message": "This model's maximum context length is 8192 tokens. However, your messages "
                                    "resulted in 9120 tokens.", "type": "invalid_request_error",
                         "code": "context_length_exceeded"},
    "content_policy": {"message": "Your request was rejected as a result of our safety system.",
                       "type": "invalid_request_error", "code": "content_policy_violation"},
    "content_filter": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
                                  "management policy.", "type": None, "code": "content_filter"},
    "bad_request": {"message": "Invalid value for 'tool_choice': 'auto' is not supported with this model.",
                    "type": "invalid_request_error", "code": "invalid_value"},
}


def _message(calls=None, content=None, prompt_mode=False):
    if prompt_mode and calls:  # tools were rendered into the prompt: answer in text
        content = "\n".join(f'<tool_call>{{"name": "{n}", "arguments": {a}}}</tool_call>' for n, a in calls)
        calls = None
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": "scripted",
        "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class ScriptedServer(ThreadedChatServer):
    def __init__(self, modes_by_prompt: dict[str, str], stall_s: float = 3.0, *, status_all: int | None = None,
                 served_model: str | None = None):
        self.modes = modes_by_prompt
        self.status_all = status_all
        self.served_model = served_model
        self.stall_s = stall_s
        self.requests = 0
        self.prompt_mode_requests = 0
        self.attempts: dict[tuple[str, int], int] = defaultdict(int)
        self.start()

    async def _chat(self, request: web.Request) -> web.Response:
        self.requests += 1
        body = await request.json()
        if self.status_all == 401:
            return web.json_response({"error": {"message": "Incorrect API key provided: sk-test.",
                                                "type": "invalid_request_error", "code": "invalid_api_key"}}, status=401)
        if self.status_all is not None:
            return web.json_response({"error": {"message": "the server is down"}}, status=self.status_all)
        if self.served_model is not None and body["model"] != self.served_model:
            return web.json_response({"error": {"message": f"The model `{body['model']}` does not exist.",
                                                "type": "invalid_request_error", "code": "model_not_found"}}, status=404)
        messages = body["messages"]
        prompt_mode = "tools" not in body
        self.prompt_mode_requests += prompt_mode
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        mode = self.modes.get(prompt, "good")
        step = sum(1 for m in messages if m["role"] == "assistant")
        self.attempts[(prompt, step)] += 1
        attempt = self.attempts[(prompt, step)]
        if mode == "always_500" or (mode == "server_error" and step == 0 and attempt <= 2):
            return web.json_response({"error": {"message": "boom"}}, status=500)
        if mode in BAD_REQUESTS and step == 0:
            return web.json_response({"error": BAD_REQUESTS[mode]}, status=400)
        if mode == "rate_limited" and step == 0 and attempt == 1:
            return web.json_response({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "0.2"})
        if mode == "stall" and step == 0 and attempt == 1:
            await asyncio.sleep(self.stall_s)
        key = prompt.split()[-1].rstrip("?")
        good = ("lookup", json.dumps({"key": key}))
        bad = {"bad_json": ("lookup", '{"key": '), "unknown_tool": ("fetch", json.dumps({"key": key})),
               "wrong_type": ("lookup", json.dumps({"key": 5}))}
        if step == 0:
            return web.json_response(_message([bad.get(mode, good)], prompt_mode=prompt_mode))
        if prompt_mode:
            last_tool = messages[-1]["content"].split(">", 1)[1].rsplit("</tool_response>", 1)[0]
        else:
            last_tool = [m for m in messages if m["role"] == "tool"][-1]["content"]
        if "error" in last_tool:
            return web.json_response(_message([good], prompt_mode=prompt_mode))
        return web.json_response(_message(content=last_tool))
