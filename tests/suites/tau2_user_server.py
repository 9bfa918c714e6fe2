"""A real OpenAI-compatible HTTP server on 127.0.0.1 that stands in for the model playing τ²'s customer.

τ²'s user simulator sends it its whole conversation (its system prompt: the simulation guidelines and the
task's scenario; the agent's messages as the user role) and the phone's tools where the customer has one
(telecom). It answers "Yes, please go ahead."; when the agent asks "Please do this on your phone now:
NAME(ARGS)." it calls that device tool (a tool call, as τ²'s customer does), and says "Done." once the tool
has answered; it sends the stop signal ``###STOP###`` once the agent's message says goodbye or thanks the
customer for contacting. Every request is kept (``requests``). Nothing leaves the machine.
"""

from __future__ import annotations

import ast
import json
import re
import time

from aiohttp import web

from tests.chat_server import ThreadedChatServer

DO = re.compile(r"Please do this on your phone now: (\w+)\((.*)\)\.")


def device_call(text: str) -> dict | None:
    """The tool call the agent's message asks for (OpenAI form), or None."""
    m = DO.search(text)
    if not m:
        return None
    call = ast.parse(f"f({m.group(2)})", mode="eval").body
    args = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    return {"id": f"dev_{time.monotonic_ns()}", "type": "function",
            "function": {"name": m.group(1), "arguments": json.dumps(args)}}


class Tau2UserServer(ThreadedChatServer):
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.start()

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        last = body["messages"][-1]
        text = str(last.get("content") or "")
        call = device_call(text) if last["role"] == "user" else None
        if call is not None:
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        elif last["role"] == "tool":
            message = {"role": "assistant", "content": "Done."}
        elif "goodbye" in text.lower() or "for contacting" in text.lower():
            message = {"role": "assistant", "content": "Thanks, bye. ###STOP###"}
        else:
            message = {"role": "assistant", "content": "Yes, please go ahead."}
        return web.json_response({
            "id": "chatcmpl-t2", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
        })
