"""Turning OpenAI-format chat responses (dicts) into assistant messages: the backends' name for
:meth:`topoeval.core.messages.AssistantMessage.from_openai`, the one reader."""

from __future__ import annotations

from typing import Any

from topoeval.core.messages import AssistantMessage


def message_from_openai(message: dict[str, Any], usage: dict[str, Any] | None) -> AssistantMessage:
    """An OpenAI ``choices[0].message`` dict (+ ``usage``) as an AssistantMessage (see ``from_openai``)."""
    return AssistantMessage.from_openai(message, usage)
