"""The tool-call format interface: how tools, calls and results are written into a conversation.

A format turns the runner's OpenAI-format messages (``tool_calls`` on assistant turns, ``tool``
messages with results) into the plain system/user/assistant text a model was trained to read, and
turns the model's reply text back into text + calls (several calls = one parallel turn).

A plug-in subclasses :class:`ToolFormat` and overrides the four small hooks
(:meth:`~ToolFormat.render_tools`, :meth:`~ToolFormat.render_calls`,
:meth:`~ToolFormat.render_result`, :meth:`~ToolFormat.parse`); :meth:`~ToolFormat.render` assembles
the conversation from them. ``parse`` never raises: text it cannot read is either the model's
message or a call the runner rejects (an invalid call, recorded as the model's failure).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from topoeval.core.messages import AssistantMessage, ToolCall

Tools = list[dict[str, Any]]
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)


class ToolFormat:
    """One way of addressing a model with tools. Subclass it and register it (see :mod:`topoeval.formats`)."""

    #: the name used in ``--tool-format`` and ``MODEL@FORMAT``
    name: ClassVar[str] = ""
    #: one line for ``topoeval formats`` and the docs
    description: ClassVar[str] = ""
    #: True: tools go to the backend as function-calling tools and calls come back structured
    #: (the backend renders and parses them; the hooks below are not used)
    native: ClassVar[bool] = False

    # -- the hooks a plug-in writes --------------------------------------------------------
    def check(self, tools: Tools) -> None:
        """Raise :class:`~topoeval.core.errors.UserError` when these tools cannot be expressed."""

    def render_tools(self, tools: Tools) -> str:
        """The tool description appended to the system prompt."""
        raise NotImplementedError

    def render_calls(self, calls: list[tuple[str, str]], tools: Tools) -> str:
        """An assistant turn's calls, ``(name, arguments JSON text)`` each, as the model writes them."""
        raise NotImplementedError

    def render_result(self, name: str, content: str, tools: Tools) -> str:
        """One tool result as the model reads it (one turn's results go back in one user turn)."""
        raise NotImplementedError

    def parse(self, text: str, tools: Tools) -> tuple[str, list[tuple[str, str]]]:
        """(the reply's text, its calls as ``(name, arguments text)``); never raises."""
        raise NotImplementedError

    def render_answer(self, content: str) -> str:
        """An assistant turn without calls (a final answer, e.g. in a few-shot demo) as the model writes it."""
        return content

    #: between the results of one turn inside their user turn
    result_separator: ClassVar[str] = "\n"

    # -- assembled from the hooks ----------------------------------------------------------
    def render(self, messages: list[dict[str, Any]], tools: Tools) -> list[dict[str, Any]]:
        """OpenAI-format messages as plain system/user/assistant text in this format."""
        tool_block = self.render_tools(tools) if tools else ""
        out: list[dict[str, Any]] = []
        results = False  # the last user turn holds tool results
        if tools and (not messages or messages[0]["role"] != "system"):
            out.append({"role": "system", "content": tool_block})
        for m in messages:
            role, content = m["role"], m.get("content") or ""
            if role == "tool":
                line = self.render_result(m.get("name") or "", content, tools)
                if results:
                    out[-1]["content"] += self.result_separator + line
                else:
                    out.append({"role": "user", "content": line})
                results = True
                continue
            results = False
            if role == "system":
                out.append({"role": "system", "content": (content + "\n\n" + tool_block).strip()})
            elif role == "assistant":
                calls = [(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
                parts = ([content, self.render_calls(calls, tools)] if calls
                         else [self.render_answer(content) if content else ""])
                out.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
            else:
                out.append({"role": role, "content": content})
        return out

    def read_reply(self, message: AssistantMessage, tools: Tools) -> AssistantMessage:
        """A text reply re-read in this format: its calls become tool calls."""
        content, calls = self.parse(message.content or "", tools)
        tool_calls = [ToolCall(id=f"call_{i}", name=name, arguments=args) for i, (name, args) in enumerate(calls)]
        return message.model_copy(update={"content": content or None, "tool_calls": tool_calls})


def strip_think(text: str) -> str:
    """The text without ``<think>…</think>`` blocks (an unclosed one runs to the end)."""
    return _THINK.sub("", text).strip()


def arguments_text(args: Any) -> str:
    """Arguments as the JSON text a :class:`ToolCall` carries (a string is kept as written: it may be malformed)."""
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def tool_lines(tools: Tools) -> list[str]:
    """One JSON line per tool: name, description, parameters."""
    return [json.dumps({"name": t["function"]["name"], "description": t["function"].get("description", ""),
                        "parameters": t["function"].get("parameters", {})}, ensure_ascii=False) for t in tools]
