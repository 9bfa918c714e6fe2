"""Reference policies on MCP tasks, as plans for :func:`topoeval.policies.oracle.next_calls`.

- ``oracle``: the task's gold plan (parallel where it allows), then the task's final message.
- ``oracle-no-ask``: never asks; drops the questions and every call that needs their answers, and
  says it could not finish.
- ``oracle-reckless``: never asks for confirmation; asks the hidden slots only after the
  irreversible calls (it knows the answers, but acts before it has them).
- ``oracle-serial`` / ``oracle-redundant``: the gold plan, one call per turn / every read twice.
- ``oracle-no-priority``: the oracle (MCP tasks have no trade-offs).

Every variant stops when the user refuses a confirmation, and when a call of its plan errors
(it then says so: :data:`PLAN_FAILED`, and the task fails).
"""

from __future__ import annotations

import json
from typing import Any

from topoeval.core.gold import tool_results
from topoeval.core.messages import AssistantMessage, final
from topoeval.core.gold import dependents
from topoeval.core.suite import Effect, GoldCall, Task, ToolSpec
from topoeval.policies.oracle import next_calls

from .annotations import ASK_USER

GAVE_UP = "I could not finish this without more details from you."
#: How every variant ends a task whose own gold plan errored (a misspelled tool, arguments the
#: server rejects): the task then fails (:meth:`McpSuite.score`), it is not passed on a repeated answer.
PLAN_FAILED = "The task's gold plan failed: "


def plan_error(messages: list[dict[str, Any]]) -> str | None:
    """``"tool: error"`` for the first answered call whose result is an error, else None."""
    for name, _, text in tool_results(messages):
        try:
            result = json.loads(text)
        except (ValueError, TypeError):
            continue
        if isinstance(result, dict) and set(result) == {"error"}:
            return f"{name}: {result['error']}"
    return None


def plan(task: Task, variant: str) -> list[GoldCall]:
    gold = list(task.gold)
    asks = {g.id for g in gold if g.match == "ask"}
    if variant == "oracle-no-ask" and asks:
        dropped = dependents(gold, asks)
        return [g for g in gold if g.id not in dropped]
    if variant == "oracle-reckless":
        confirms = {g.id for g in gold if g.match == "confirm"}
        commits = [g.id for g in gold if g.tool in task.irreversible_tools]
        out = []
        for g in gold:
            if g.id in confirms:
                continue
            deps = [d for d in g.depends_on if d not in confirms and d not in asks]
            if g.id in asks:
                deps += [c for c in commits if c not in deps]
            out.append(g.model_copy(update={"depends_on": deps}))
        return out
    return gold


def tool_specs(task: Task) -> list[ToolSpec]:
    """Enough of the topology's tools for the plan executor (effects and the user channel)."""
    return [ToolSpec(name=name, description=name, effect=Effect(info["effect"]), idempotent=False,
                     parallel_safe=True, user_channel=bool(info.get("user_channel")))
            for name, info in task.data["tools"].items()]


def refused(messages: list[dict[str, Any]]) -> bool:
    """Whether the user answered a confirmation with no."""
    return any(name == ASK_USER and text.strip() == "No." for name, _, text in tool_results(messages))


def next_message(task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
    if refused(messages):
        return final("You did not confirm, so I stopped.")
    error = plan_error(messages)
    if error is not None:
        return final(PLAN_FAILED + error)
    steps = plan(task, variant)
    reply = next_calls(steps, messages, tool_specs(task), variant)
    if reply is not None:
        return reply
    if len(steps) < len(task.gold) and variant == "oracle-no-ask":
        return final(GAVE_UP)
    data = task.data
    return final(data.get("final") or data.get("answer") or "; ".join(data.get("answer_contains") or []) or "Done.")
