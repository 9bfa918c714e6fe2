"""An OpenAI-compatible chat server on 127.0.0.1 whose replies are a topoeval reference policy's.

It finds the task by the conversation's user prompt and answers with the suite's oracle (or a
flawed variant), in OpenAI's native tool-call format (streamed as server-sent events when the
request asks for ``stream``) — a real model endpoint for framework tests
that must run offline. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from topoeval.core.suite import Suite, Task


class OracleServer:
    def __init__(self, suite: Suite, tasks: list[Task], variant: str = "oracle"):
        self.suite, self.variant = suite, variant
        self.by_prompt = {t.prompt: t for t in tasks}
        self.requests = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.api_base = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, messages: list[dict]) -> dict:
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        content = prompt if isinstance(prompt, str) else "".join(p.get("text", "") for p in prompt)
        msg = self.suite.oracle(self.by_prompt[content], messages, self.variant).openai()
        return {"id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": self.variant,
                "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                server.requests += 1
                reply = server.reply(body["messages"])
                if body.get("stream"):
                    out = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in _chunks(reply)).encode()
                    out += b"data: [DONE]\n\n"
                    content_type = "text/event-stream"
                else:
                    out, content_type = json.dumps(reply).encode(), "application/json"
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        return Handler


def _chunks(reply: dict) -> list[dict]:
    """A completion as the chunks of a streamed one (``stream=True``): the whole message in one
    delta (tool calls indexed), then the finish reason, then the usage."""
    choice = reply["choices"][0]
    delta = {"role": "assistant", "content": choice["message"].get("content")}
    if choice["message"].get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(choice["message"]["tool_calls"])]
    head = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    return [head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
            head | {"choices": [], "usage": reply["usage"]}]
