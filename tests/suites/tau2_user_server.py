"""A real OpenAI-compatible HTTP server on 127.0.0.1 that stands in for the model playing τ²'s customer.

τ²'s user simulator sends it its whole conversation (its system prompt: the simulation guidelines and the
task's scenario; the agent's messages as the user role). It answers "Yes, please go ahead." — and the stop
signal ``###STOP###`` once the agent's message says goodbye or thanks the customer for contacting. Every
request is kept (``requests``), so a test can read what τ²'s simulator asked. Nothing leaves the machine.
"""

from __future__ import annotations

import time

from aiohttp import web

from tests.chat_server import ThreadedChatServer


class Tau2UserServer(ThreadedChatServer):
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.start()

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        last = str(body["messages"][-1].get("content") or "").lower()
        content = "Thanks, bye. ###STOP###" if ("goodbye" in last or "for contacting" in last) else \
            "Yes, please go ahead."
        return web.json_response({
            "id": "chatcmpl-t2", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
        })
