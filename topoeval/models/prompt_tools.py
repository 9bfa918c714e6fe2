"""Prompt-based tool calling for models without native function calling: the ``hermes`` format.

Tools are described in the system prompt; the model writes each call as one
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` block (several blocks = one parallel
turn); tool results go back as text in ``<tool_response>`` blocks inside a user turn. The code
lives in :mod:`topoeval.formats.hermes` (one of the pluggable tool-call formats); these names stay.
"""

from __future__ import annotations

from topoeval.formats.hermes import (
                                     INSTRUCTIONS,
                                     call_text,
                                     parse_prompt_reply,
                                     prompt_reply,
                                     render_tools,
                                     to_prompt_messages,
)

__all__ = ["INSTRUCTIONS", "call_text", "parse_prompt_reply", "prompt_reply", "render_tools", "to_prompt_messages"]
