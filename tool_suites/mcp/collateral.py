"""An MCP task's collateral scope, its entities, and ``oracle-collateral``'s damage.

**Entities** (:func:`entities`): the snapshot is the text output of the task file's ``state``
commands; every non-empty output line is one entity, named ``<state command> | <line>`` (a line
that repeats gets `` #2``, `` #3``...). For the shipped git tasks that is a file's status line
(``git status --porcelain=v1 --branch | M  src/tally.py``), the checked-out branch
(``... | ## main``), a commit (``git log --all --format=%s | Add tests``) and a branch with its tip
(``git for-each-ref ... | develop Add counter``). A line that changes reads as one line gone and
another come.

**Scope** (:func:`scope`): the state after the task's gold plan has run on a fresh world (its own
scratch folder and server; ``ask_user`` is skipped, the plan's arguments already hold the user's
answers), plus the task's declared ``scope`` patterns for lines whose end value the gold plan does
not fix. Where the gold plan cannot run (it errors), only the declared patterns stand
(``declared_scope``), and a task with neither has no collateral reading.

**oracle-collateral** (:func:`collateral_call`): after the gold plan, the task file's
``collateral`` calls (a task's own ``collateral`` replaces the file's), one per turn, in order.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from topoeval.core.collateral import CollateralScope
from topoeval.core.suite import Task, ToolError, WorldError

from .annotations import ASK_USER
from .taskfile import ENTITY_SEPARATOR
from .world import McpWorld

#: Prefix of the tool-call ids oracle-collateral gives its calls (topoeval.policies.reference.CollateralPolicy).
CALL_PREFIX = "collateral_"
_GOLD: dict[str, dict[str, Any] | None] = {}


def entities(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Every non-empty line of every state command's output, as ``<command> | <line>`` -> the line."""
    out: dict[str, Any] = {}
    for command, text in snapshot.items():
        seen: Counter[str] = Counter()
        for raw in str(text).splitlines():
            line = raw.rstrip()
            if not line:
                continue
            seen[line] += 1
            name = f"{command}{ENTITY_SEPARATOR}{line}" + (f" #{seen[line]}" if seen[line] > 1 else "")
            out[name] = line
    return out


def gold_state(task: Task) -> dict[str, Any] | None:
    """The snapshot after the task's gold plan on a fresh world (cached per task), or None when a
    call of the plan errors."""
    d = task.data
    key = json.dumps([d["file"], d["name"], d["fixture"], d["server"], d["state"]], sort_keys=True, default=str)
    if key not in _GOLD:
        try:
            world = McpWorld(d)
        except WorldError:  # the server does not start: the episode says so itself
            return None
        try:
            for call in task.gold:
                if call.tool != ASK_USER:
                    world.call(call.tool, call.arguments)
            _GOLD[key] = world.snapshot()
        except (ToolError, WorldError):
            _GOLD[key] = None
        finally:
            world.close()
    return _GOLD[key]


def scope(task: Task) -> CollateralScope | None:
    """The world after the gold plan, plus the task's declared patterns (module docstring)."""
    declared = list(task.data.get("scope") or [])
    gold = gold_state(task)
    if gold is None and not declared:
        return None
    return CollateralScope(gold_state=gold, in_scope=declared)


def collateral_call(task: Task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """The next of the task's damage calls (those oracle-collateral already made are counted by
    their ids), or None once all are made or where the task has none."""
    plan = task.data.get("collateral") or []
    made = sum(1 for m in messages if m.get("role") == "assistant"
               for c in m.get("tool_calls") or [] if str(c.get("id", "")).startswith(CALL_PREFIX))
    if made >= len(plan):
        return None
    return plan[made]["tool"], dict(plan[made].get("arguments") or {})
