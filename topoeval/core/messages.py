"""Chat messages in the OpenAI format, as the runner and the policies exchange them."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field


class ToolCall(BaseModel):
    """A call as the model emitted it; ``arguments`` stays the raw string until validated."""

    id: str = Field(description="Call id, echoed by the tool message that answers it.")
    name: str = Field(description="Tool name as emitted (may be unknown).")
    arguments: str = Field(default="{}", description="Raw JSON text of the arguments (may be malformed).")

    @classmethod
    def make(cls, id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
        return cls(id=id, name=name, arguments=json.dumps(arguments, ensure_ascii=False))

    def openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class Usage(BaseModel):
    """Token counts of one model response."""

    prompt_tokens: int = Field(default=0, description="Tokens read.")
    completion_tokens: int = Field(default=0, description="Tokens generated.")


class AssistantMessage(BaseModel):
    """One policy turn: text and/or tool calls (several calls = a parallel turn)."""

    content: str | None = Field(default=None, description="Text of the turn; the final answer when no calls.")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="Calls made this turn.")
    usage: Usage = Field(default_factory=Usage, description="Tokens used for this turn.")
    cost: float | None = Field(default=None, description="Cost in USD when the backend knows it.")
    latency_s: float = Field(default=0.0, description="Wall time the policy took for this turn.")

    def openai(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [c.openai() for c in self.tool_calls]
        return msg

    @classmethod
    def from_openai(cls, message: Any, usage: dict[str, Any] | None = None,
                    id_template: str = "call_{i}") -> AssistantMessage:
        """The one reader of an OpenAI-format assistant message: a ``choices[0].message`` dict (or an
        object with the same attributes, as adapters' message classes are), plus ``usage``.

        A call is ``{"id", "function": {"name", "arguments"}}`` or flat ``{"id", "name", "arguments"}``;
        arguments given as an object are serialised, missing or empty ones are ``"{}"``; a call without
        an id gets ``id_template`` filled with its index (``""``: left for the caller to assign). Content
        given as parts is joined. Nothing here raises on a malformed call: the runner validates them.
        ``tool_calls`` that is not a list (a string, an object, a number) is one call with no name (one
        invalid call, its arguments the value as JSON), never one call per character or key.
        """
        calls = []
        raw_calls = _get(message, "tool_calls") or []
        if not isinstance(raw_calls, (list, tuple)):
            raw_calls = [{"name": "", "arguments": json.dumps(raw_calls, ensure_ascii=False, default=str)}]
        for i, call in enumerate(raw_calls):
            fn = _get(call, "function") or call
            args = _get(fn, "arguments")
            if args is not None and not isinstance(args, str):
                args = json.dumps(args, ensure_ascii=False)
            calls.append(ToolCall(id=_get(call, "id") or id_template.format(i=i), name=_get(fn, "name") or "",
                                  arguments=args or "{}"))
        content = _get(message, "content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        usage = usage or {}
        return cls(content=content, tool_calls=calls,
                   usage=Usage(prompt_tokens=usage.get("prompt_tokens") or 0,
                               completion_tokens=usage.get("completion_tokens") or 0))


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` of a dict, else the attribute (None when absent)."""
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def final(text: str) -> AssistantMessage:
    """An assistant turn that ends the episode with ``text`` as the answer."""
    return AssistantMessage(content=text)


def calls(*items: tuple[str, dict[str, Any]], prefix: str = "call") -> AssistantMessage:
    """An assistant turn made of the given (tool, arguments) calls."""
    return AssistantMessage(tool_calls=[ToolCall.make(f"{prefix}_{i}", n, a) for i, (n, a) in enumerate(items)])
