"""A real OpenAI-compatible HTTP server on 127.0.0.1 that plays the traveller (an "LLM user").

It reads what the fixed instruction gives it (the budget line of the system message) and the question
(the user message) and answers in the JSON the LLM traveller expects, by its own crude keyword rules —
different from the deterministic reader's on purpose, so that agreement is measurable. A question
holding ``GARBAGE`` gets a reply that is not JSON. ``misread_airline``: airline questions are read as
route questions. ``delay_s``: each reply waits that long (a slow model; requests are served concurrently),
and ``spans`` records each request's (start, end) times. aiohttp in a background thread with its own loop;
nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

from aiohttp import web

from tests.chat_server import ThreadedChatServer

FLIGHT = re.compile(r"\b([A-Z]{2}\d{5})\b")


class UserServer(ThreadedChatServer):
    def __init__(self, misread_airline: bool = False, delay_s: float = 0.0):
        self.misread_airline = misread_airline
        self.delay_s = delay_s
        self.requests: list[dict] = []
        self.spans: list[tuple[float, float]] = []
        self.start()

    def reply(self, system: str, question: str) -> str:
        if "GARBAGE" in question:
            return "Sure! I'd love to help with that."
        m = FLIGHT.search(question)
        if m:
            return json.dumps({"slots": [], "confirm": m.group(1), "answer": "Yes."})
        q = question.lower()
        slots = [s for s, words in (("budget", ("budget", "price", "pay", "$")),
                                    ("airline", ("airline", "carrier")),
                                    ("dates", ("date", "when", "day"))) if any(w in q for w in words)]
        if self.misread_airline:
            slots = ["route" if s == "airline" else s for s in slots]
        facts = dict(re.findall(r"^- (budget|airline|dates you can fly): (.*)$", system, re.M))
        answer = "(llm) " + " ".join(f"{k}: {facts[k]}." for k in ("budget", "airline", "dates you can fly")
                                     if (k.split()[0] in slots) and k in facts) if slots else "(llm) Noted."
        return json.dumps({"slots": slots, "confirm": None, "answer": answer})

    async def _chat(self, request: web.Request) -> web.Response:
        start = time.perf_counter()
        body = await request.json()
        self.requests.append(body)
        msgs = body["messages"]
        content = self.reply(msgs[0]["content"], msgs[-1]["content"])
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        self.spans.append((start, time.perf_counter()))
        return web.json_response({
            "id": "chatcmpl-u", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
        })
