"""``json``: the model calls tools with bare JSON — one ``{"name": ..., "arguments": {...}}`` object, or a
list of them for one parallel turn — and answers in plain text; results come back as JSON lines.

Parsing: the reply's first ``{`` or ``[`` (after an optional code fence) starts the calls; text before
it is the turn's text. JSON that does not decode, or does not hold calls, becomes one invalid call
(the runner records it), never a crash. A reply with no ``{``/``[`` at all is the model's message.
"""

from __future__ import annotations

import json
import re

from topoeval.formats.base import ToolFormat, Tools, arguments_text, tool_lines

_START = re.compile(r"```(?:json)?\s*|(?=[\[{])")
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
INSTRUCTIONS = (
    'To call a tool, reply with only a JSON object {"name": "<tool name>", "arguments": {...}}; to call several '
    "tools at once, a JSON list of such objects. Results come back as JSON. When you are done, reply with plain "
    "text (no JSON)."
)


def _calls(obj) -> list[tuple[str, str]] | None:
    """The calls a decoded reply holds, or None if it holds none."""
    if isinstance(obj, dict) and isinstance(obj.get("tool_calls"), list):
        obj = obj["tool_calls"]
    items = obj if isinstance(obj, list) else [obj]
    out = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):  # OpenAI's own shape
            item = item["function"]
        if not isinstance(item, dict) or "name" not in item:
            return None
        out.append((str(item["name"]), arguments_text(item.get("arguments", item.get("parameters", {})))))
    return out or None


class JsonFormat(ToolFormat):
    name = "json"
    description = 'bare JSON calls: {"name": ..., "arguments": {...}} or a list of them; text answers'

    def render_tools(self, tools: Tools) -> str:
        return "\n".join(["# Tools", *tool_lines(tools), INSTRUCTIONS])

    def render_calls(self, calls: list[tuple[str, str]], tools: Tools) -> str:
        objs = []
        for name, args in calls:
            try:
                objs.append({"name": name, "arguments": json.loads(args)})
            except json.JSONDecodeError:
                objs.append({"name": name, "arguments": args})
        return json.dumps(objs[0] if len(objs) == 1 else objs, ensure_ascii=False)

    def render_result(self, name: str, content: str, tools: Tools) -> str:
        return json.dumps({"name": name, "result": content}, ensure_ascii=False)

    def parse(self, text: str, tools: Tools) -> tuple[str, list[tuple[str, str]]]:
        text = text.strip()
        start = _START.search(text)
        if start is None:
            return text, []
        head, body = text[:start.start()].strip(), text[start.end():].strip()
        body = body.split("```", 1)[0].strip()
        try:
            obj, _ = json.JSONDecoder().raw_decode(body)
        except json.JSONDecodeError:
            if not body.startswith(("{", "[")) or head and '"name"' not in body:
                return text, []  # prose with a stray brace, not an attempted call
            name = _NAME.search(body)
            return head, [(name.group(1) if name else "", body)]
        calls = _calls(obj)
        if calls is None:
            if isinstance(obj, dict) and isinstance(answer := obj.get("answer", obj.get("response")), str):
                return answer, []
            return head, [("", body)]
        return head, calls
