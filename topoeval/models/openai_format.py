"""Turning OpenAI-format chat responses (dicts) into assistant messages."""

from __future__ import annotations

import json
from typing import Any

from topoeval.core.messages import AssistantMessage, ToolCall, Usage


def message_from_openai(message: dict[str, Any], usage: dict[str, Any] | None) -> AssistantMessage:
    """An OpenAI ``choices[0].message`` dict (+ ``usage``) as an AssistantMessage.

    Arguments that arrive as objects are re-serialised; missing ids are left empty (the runner
    assigns them). Nothing here raises on malformed calls: the runner validates them.
    """
    calls = []
    for i, c in enumerate(message.get("tool_calls") or []):
        fn = c.get("function") or {}
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        calls.append(ToolCall(id=c.get("id") or f"call_{i}", name=fn.get("name") or "", arguments=args or "{}"))
    usage = usage or {}
    return AssistantMessage(
        content=message.get("content"),
        tool_calls=calls,
        usage=Usage(prompt_tokens=usage.get("prompt_tokens") or 0, completion_tokens=usage.get("completion_tokens") or 0),
    )
