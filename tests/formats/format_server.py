"""A real OpenAI-compatible HTTP server on 127.0.0.1 that answers in one tool-call format.

It replays recorded replies of the echo suite (tests/fixtures/suites/echo: look a key up, then
answer with its value) written the way a checkpoint trained on that format writes them: a good
call, a malformed one, or a call to an unknown tool (chosen per task by its prompt); after an error
result it makes the good call, after a good result it answers. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import re
import time

from aiohttp import web

from tests.chat_server import ThreadedChatServer

#: (format) -> how a recorded reply writes a call of ``lookup`` with the key, and a final answer
CALLS = {
    "native": lambda key: None,
    "hermes": lambda key: f'<tool_call>{{"name": "lookup", "arguments": {{"key": "{key}"}}}}</tool_call>',
    "json": lambda key: f'{{"name": "lookup", "arguments": {{"key": "{key}"}}}}',
    "react": lambda key: f'Thought: I should look it up.\nAction: lookup\nAction Input: {{"key": "{key}"}}',
    "search-r1": lambda key: f"<think>I need to search for it.</think>\n<search> {key} </search>",
}
MALFORMED = {
    "native": None,
    "hermes": '<tool_call>{"name": "lookup", "arguments": {"key": ',
    "json": '{"name": "lookup", "arguments": {"key": "k1"',
    "react": "Action: lookup\nAction Input: {key: k1}",
    "search-r1": '<tool_call>{"name": "lookup", "arguments": {"key": }</tool_call>',
}
UNKNOWN = {
    "hermes": '<tool_call>{"name": "fetch", "arguments": {"key": "k1"}}</tool_call>',
    "json": '[{"name": "fetch", "arguments": {"key": "k1"}}]',
    "react": 'Action: fetch\nAction Input: {"key": "k1"}',
    "search-r1": '<tool_call>{"name": "fetch", "arguments": {"key": "k1"}}</tool_call>',
}
ANSWERS = {
    "native": lambda v: v, "hermes": lambda v: v, "json": lambda v: json.dumps({"answer": v}),
    "react": lambda v: f"Thought: I have it.\nFinal Answer: {v}",
    "search-r1": lambda v: f"<think>found it</think>\n<answer> {v} </answer>",
}
#: the last tool result as each format renders it into the conversation
RESULTS = {
    "hermes": re.compile(r"<tool_response[^>]*>(.*?)</tool_response>\s*$", re.DOTALL),
    "json": re.compile(r'"result": "(.*?)"\}\s*$', re.DOTALL),
    "react": re.compile(r"Observation: (.*?)\s*$", re.DOTALL),
    "search-r1": re.compile(r"<information>(.*?)</information>\s*$", re.DOTALL),
}
#: what each format's system prompt must say (proof the model was addressed in it)
MARKERS = {"hermes": "<tool_call>", "json": "a JSON list", "react": "Action Input:", "search-r1": "<search> query </search>"}


class FormatServer(ThreadedChatServer):
    """``fmt``: the format every reply is written in, or ``auto``: the format each request is written in."""

    def __init__(self, fmt: str, modes: dict[str, str]):
        self.fmt, self.modes = fmt, modes
        self.bodies: list[dict] = []
        #: the format of each answered request ("auto": read from the request)
        self.fmt_seen: list[str] = []
        self.start()

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        return await self._answer(body, self.fmt if self.fmt != "auto" else detect(body))

    async def _answer(self, body: dict, fmt: str) -> web.Response:
        self.fmt_seen.append(fmt)
        messages = body["messages"]
        asks = [i for i, m in enumerate(messages) if m["role"] == "user" and "stored under" in m["content"]]
        if not asks:  # the preflight
            return web.json_response(_reply(content="OK"))
        prompt = messages[asks[-1]]["content"]  # the task's (earlier ones are few-shot demos)
        mode = self.modes.get(prompt, "good")
        key = prompt.split()[-1].rstrip("?")
        if not any(m["role"] == "assistant" for m in messages[asks[-1]:]):
            if mode == "good":
                return web.json_response(self._call(key, fmt))
            if fmt == "native":
                name, args = ("fetch", json.dumps({"key": key})) if mode == "unknown_tool" else ("lookup", '{"key": ')
                return web.json_response(_reply(calls=[(name, args)]))
            return web.json_response(_reply(content=(MALFORMED if mode == "malformed" else UNKNOWN)[fmt]))
        if fmt == "native":
            last = [m for m in messages if m["role"] == "tool"][-1]["content"]
        else:
            found = RESULTS[fmt].search(messages[-1]["content"])
            last = found.group(1) if found else "(no result found)"
        if "error" in last.lower() or "invalid" in last.lower() or "unknown" in last.lower():
            return web.json_response(self._call(key, fmt))
        return web.json_response(_reply(content=ANSWERS[fmt](json.loads(last) if last.startswith('"') else last)))

    def _call(self, key: str, fmt: str) -> dict:
        if fmt == "native":
            return _reply(calls=[("lookup", json.dumps({"key": key}))])
        return _reply(content=CALLS[fmt](key))


def detect(body: dict) -> str:
    """The format a request is written in: native when it sends tools, else by its system prompt."""
    if "tools" in body:
        return "native"
    system = body["messages"][0]["content"]
    return next((fmt for fmt, marker in MARKERS.items() if marker in system and fmt != "hermes"), "hermes")


def _reply(content=None, calls=None) -> dict:
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
                             for i, (n, a) in enumerate(calls)]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": "scripted",
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
