"""``hermes``: tools as JSON lines in the system prompt, each call a ``<tool_call>{json}</tool_call>``
block (several blocks = one parallel turn), results in ``<tool_response>`` blocks inside a user turn
(Hermes/Qwen style). It is topoeval's prompt mode: ``--tool-mode prompt`` and ``--tool-format hermes``
send the same text (:mod:`topoeval.models.prompt_tools` re-exports these functions).
"""

from __future__ import annotations

import json
import re
from typing import Any

from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.formats.base import ToolFormat, Tools

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')

INSTRUCTIONS = (
    "To call a tool, write one line per call: "
    '<tool_call>{{"name": "<tool name>", "arguments": {{...}}}}</tool_call>. '
    "Several lines make calls that run together. Results come back in <tool_response> blocks. "
    "When you are done, reply without any <tool_call>."
)


def render_tools(tools: list[dict[str, Any]]) -> str:
    lines = ["# Tools"]
    for t in tools:
        fn = t["function"]
        lines.append(json.dumps({"name": fn["name"], "description": fn.get("description", ""),
                                 "parameters": fn.get("parameters", {})}, ensure_ascii=False))
    return "\n".join(lines) + "\n" + INSTRUCTIONS.format()


def call_text(name: str, arguments: str) -> str:
    try:
        args: Any = json.loads(arguments)
    except json.JSONDecodeError:
        args = arguments
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "</tool_call>"


def result_text(name: str, content: str) -> str:
    return f'<tool_response name="{name}">{content}</tool_response>'


def to_prompt_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-format messages (tool calls and tool results) as plain system/user/assistant text."""
    out: list[dict[str, Any]] = []
    tool_block = render_tools(tools) if tools else ""
    if not messages or messages[0]["role"] != "system":
        out.append({"role": "system", "content": tool_block})
    for m in messages:
        role = m["role"]
        if role == "system":
            out.append({"role": "system", "content": ((m.get("content") or "") + "\n\n" + tool_block).strip()})
        elif role == "assistant":
            parts = [m.get("content") or ""]
            parts += [call_text(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
            out.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
        elif role == "tool":
            block = result_text(m.get("name", ""), m.get("content") or "")
            if out and out[-1]["role"] == "user" and out[-1].get("_tool_results"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool_results": True})
        else:
            out.append({"role": role, "content": m.get("content") or ""})
    for m in out:
        m.pop("_tool_results", None)
    return out


def parse_prompt_reply(text: str | None) -> tuple[str, list[ToolCall]]:
    """(remaining text, calls) from a model reply; malformed blocks become calls the runner rejects."""
    text = text or ""
    calls: list[ToolCall] = []
    for i, raw in enumerate(_BLOCK.findall(text)):
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            name = _NAME.search(raw)
            calls.append(ToolCall(id=f"call_{i}", name=name.group(1) if name else "", arguments=raw))
            continue
        if not isinstance(obj, dict):
            calls.append(ToolCall(id=f"call_{i}", name="", arguments=raw))
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        calls.append(ToolCall(id=f"call_{i}", name=str(obj.get("name", "")),
                              arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)))
    content = _BLOCK.sub("", text).strip()
    return content, calls


def prompt_reply(message: AssistantMessage) -> AssistantMessage:
    """Re-read a text-only reply in prompt mode: its <tool_call> blocks become tool calls."""
    content, calls = parse_prompt_reply(message.content)
    return message.model_copy(update={"content": (content or None) if calls else message.content, "tool_calls": calls})


class HermesFormat(ToolFormat):
    name = "hermes"
    description = "<tool_call>{json}</tool_call> blocks, <tool_response> results (Hermes/Qwen; the prompt mode)"

    def render_tools(self, tools: Tools) -> str:
        return render_tools(tools)

    def render_calls(self, calls: list[tuple[str, str]], tools: Tools) -> str:
        return "\n".join(call_text(name, args) for name, args in calls)

    def render_result(self, name: str, content: str, tools: Tools) -> str:
        return result_text(name, content)

    def parse(self, text: str, tools: Tools) -> tuple[str, list[tuple[str, str]]]:
        content, calls = parse_prompt_reply(text)
        return content, [(c.name, c.arguments) for c in calls]

    def render(self, messages: list[dict[str, Any]], tools: Tools) -> list[dict[str, Any]]:
        return to_prompt_messages(messages, tools)

    def read_reply(self, message: AssistantMessage, tools: Tools) -> AssistantMessage:
        return prompt_reply(message)
