"""Bounds on what a model's reply may hold, so no reply can stop a run.

Whatever a model (or a hostile endpoint, or a prompt-injected model) returns passes
:func:`bound_reply` where it enters topoeval (the chat backends before their tool-call format parses
the text, and the runner for every policy, cached replies included): text over
:attr:`ReplyLimits.max_reply_chars` is cut (the cut is marked in the text), a tool name over
:attr:`ReplyLimits.max_tool_name_chars` is cut (the call is then an unknown tool: an invalid call),
and characters that cannot be written as UTF-8 (lone surrogates) become ``?``. Arguments nested deeper
than :attr:`ReplyLimits.max_argument_depth` are an invalid call
(:func:`topoeval.runner.tool_exec.parse_arguments`, using :func:`nesting_depth`, which never recurses).

>>> from topoeval.core.messages import AssistantMessage, ToolCall
>>> reply = AssistantMessage(tool_calls=[ToolCall(id="c", name="x" * 10_000, arguments="[" * 5000)])
>>> bounded = bound_reply(reply, ReplyLimits())
>>> len(bounded.tool_calls[0].name) < 400, nesting_depth(bounded.tool_calls[0].arguments)
(True, 5000)
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from topoeval.core.messages import AssistantMessage

#: marks where a bound cut a text (followed by how many characters were dropped and which limit)
CUT = "…[cut by topoeval: {n} more characters over {limit}]"


class ReplyLimits(BaseModel):
    """How much of one model reply topoeval takes in (``RunConfig.reply_limits``; raise one if a model
    legitimately needs more). A reply over a limit is never an error of the run: its text is cut, and a
    call it makes invalid is recorded as an invalid call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_reply_chars: int = Field(default=200_000, ge=1_000, description=(
        "Characters of one reply taken in: its text, then each call's name and arguments, in that order; the rest is "
        "cut (a cut call's arguments are then not valid JSON: an invalid call)."))
    max_tool_name_chars: int = Field(default=256, ge=16, description=(
        "Characters of a tool name; a longer name is cut (no tool has it: an invalid call)."))
    max_argument_depth: int = Field(default=64, ge=2, description=(
        "How deep a call's arguments may nest (objects and arrays); deeper is an invalid call, never parsed."))
    max_response_bytes: int = Field(default=16 * 2**20, ge=2**16, description=(
        "Bytes of one HTTP response body read from a model server (direct:NAME); a longer or endless body ends "
        "the request as an error (the episode is recorded with status error)."))


def _clean(text: str) -> str:
    """``text`` with every character UTF-8 cannot hold (a lone surrogate) replaced by ``?``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def _cut(text: str, budget: int, limit: str) -> str:
    if len(text) <= budget:
        return text
    return text[:max(budget, 0)] + CUT.format(n=len(text) - max(budget, 0), limit=limit)


def bound_reply(reply: AssistantMessage, limits: ReplyLimits) -> AssistantMessage:
    """``reply`` within ``limits`` (module docstring); the same object when it already is."""
    budget = limits.max_reply_chars
    changed = False
    content = reply.content
    if content is not None:
        new = _cut(_clean(content), budget, "max_reply_chars")
        budget -= len(content)
        changed |= new is not content
        content = new
    calls = []
    for call in reply.tool_calls:
        name = _cut(_clean(call.name), limits.max_tool_name_chars, "max_tool_name_chars")
        ident = _cut(_clean(call.id), limits.max_tool_name_chars, "max_tool_name_chars")
        budget -= len(name) + len(ident)
        arguments = _cut(_clean(call.arguments), max(budget, 0), "max_reply_chars")
        budget -= len(call.arguments)
        if (name, ident, arguments) != (call.name, call.id, call.arguments):
            changed = True
            call = call.model_copy(update={"name": name, "id": ident, "arguments": arguments})
        calls.append(call)
    if not changed:
        return reply
    return reply.model_copy(update={"content": content, "tool_calls": calls})


def nesting_depth(text: str) -> int:
    """How deep the JSON ``text`` nests (``{}``/``[]`` outside strings), found in one pass without
    recursion, so any depth is measured safely before the text is parsed."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    return deepest
