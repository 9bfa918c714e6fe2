"""Reading an action (what a trainer or a user hands the env or reward) as an assistant message."""

from __future__ import annotations

from typing import Any

from topoeval.core.messages import AssistantMessage


def as_assistant_message(action: Any) -> AssistantMessage:
    """An assistant message from an OpenAI-format dict, an AssistantMessage or prompt-tools text."""
    from topoeval.models.openai_format import message_from_openai
    from topoeval.models.prompt_tools import prompt_reply

    if isinstance(action, AssistantMessage):
        return action
    if isinstance(action, str):
        return prompt_reply(AssistantMessage(content=action))
    if isinstance(action, dict):
        return message_from_openai(action, None)
    raise TypeError(f"an action is an assistant message (dict, AssistantMessage or str), not {type(action).__name__}")
