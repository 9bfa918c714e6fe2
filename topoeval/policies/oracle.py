"""Executing an oracle plan (a DAG of calls) from a transcript, and the generic flawed variants.

Suites describe *what* their oracle does as a plan; this module decides *when*: every plan node
whose dependencies are done, and whose user instruction has been given, goes into the next turn
(parallel), except for ``oracle-serial`` (one call per turn); ``oracle-redundant`` sends every
world read call twice. When nothing is pending the suite's oracle hands the turn back (a message
without calls), which on a multi-turn task brings the next instruction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topoeval.core.gold import tool_results
from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.core.suite import GoldCall, ToolSpec

#: Reference-policy variants: each breaks exactly one decision-quality dimension.
VARIANTS = ("oracle", "oracle-no-ask", "oracle-reckless", "oracle-serial", "oracle-no-priority", "oracle-redundant")

Resolver = Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any] | None]


def next_calls(
    plan: list[GoldCall],
    messages: list[dict[str, Any]],
    tools: list[ToolSpec],
    variant: str = "oracle",
    resolve: Resolver | None = None,
) -> AssistantMessage | None:
    """The next turn of ``plan`` given the calls already answered in ``messages`` (the episode's,
    from its first user message); None when nothing of the instructions given so far is left.

    Each answered call completes one plan node (identical nodes need as many calls).
    ``resolve(arguments, messages)`` fills placeholders (e.g. a hold id) from earlier
    observations; it returns None while a placeholder cannot be filled yet.
    """
    unused = [(name, args) for name, args, _ in tool_results(messages)]
    given = max(0, sum(1 for m in messages if m.get("role") == "user") - 1)
    resolved = {node.id: resolve(node.arguments, messages) if resolve else node.arguments for node in plan}
    done = set()
    for node in plan:
        key = (node.tool, resolved[node.id])
        if resolved[node.id] is not None and key in unused:
            unused.remove(key)
            done.add(node.id)
    pending = [n for n in plan if n.id not in done and n.instruction <= given and all(d in done for d in n.depends_on)]
    if not pending:
        return None
    if variant == "oracle-serial":
        pending = pending[:1]
    specs = {t.name: t for t in tools}
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    out: list[ToolCall] = []
    for node in pending:
        args = resolved[node.id]
        if args is None:
            continue
        out.append(ToolCall.make(f"t{turn}_{node.id}", node.tool, args))
        spec = specs.get(node.tool)
        if variant == "oracle-redundant" and spec and spec.effect.value == "read" and not spec.user_channel:
            out.append(ToolCall.make(f"t{turn}_{node.id}_again", node.tool, args))
    return AssistantMessage(tool_calls=out) if out else None


def quit_early(step: AssistantMessage, made: int, budget: int, tools: list[ToolSpec]) -> AssistantMessage | None:
    """``oracle-quit-early``'s cut of the oracle's next turn ``step``: the calls that fit in a
    budget of ``budget`` calls (``made`` spent already), stopping before anything irreversible;
    None when nothing is left to do (the policy then stops without committing)."""
    irreversible = {t.name for t in tools if t.effect.value == "irreversible"}
    keep: list[ToolCall] = []
    for call in step.tool_calls:
        if call.name in irreversible or made + len(keep) >= budget:
            break
        keep.append(call)
    return AssistantMessage(tool_calls=keep) if keep else None
