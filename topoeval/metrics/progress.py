"""Progress of one episode along its task's gold plan: the base of ``parallelism`` and ``efficiency``.

The gold DAG lists the calls a task needs. *Progress* is judged on its **world calls** — the
nodes that are not questions or confirmations to the user (those are judged by
``clarification`` and ``risk``) — and on the agent's world calls:

- **matching** (:func:`topoeval.metrics.matching.progress_match`): each call is assigned to the
  first gold node, not matched yet, that it matches. A repeat of an already matched node matches
  nothing. A write or irreversible node is matched by any successful call of its tool: *which*
  object the agent held or paid for is a decision, judged by ``success``, ``priority`` and
  ``risk``, not by progress.
- **what the episode is judged on** (``expected``): every world node, except
  (1) nodes with an argument that is the value of a hidden slot the agent never asked about,
  and the nodes that depend on them — not asking is ``clarification``'s to judge, and such a
  node could only be guessed; and (2) after the user refused a confirmation, the nodes that
  depend on a confirmation node — the plan beyond a refusal no longer applies. A node the
  agent matched anyway (a lucky guess) is always judged.
- **which calls count**: world calls made before the first refused confirmation (what follows
  is a re-plan the gold DAG cannot judge), without *guesses* — calls that would match a node of
  (1) if its hidden-slot arguments were ignored.

``coverage`` = matched nodes / expected nodes (``None`` when nothing is expected: the whole plan
hinged on a question the agent never asked). ``precision`` = matched calls / counted calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topoeval.core.gold import dependents
from topoeval.core.suite import GoldCall, Task, ToolSpec
from topoeval.metrics.matching import progress_match


@dataclass(frozen=True)
class Progress:
    """How far an episode got along the world calls of its gold plan."""

    #: World nodes of the gold DAG, their dependencies made transitive through the user nodes.
    nodes: list[GoldCall]
    #: Ids of the nodes the episode is judged on (see the module docstring).
    expected: frozenset[str]
    #: Call index -> id of the gold node the call matched.
    matched: dict[int, str]
    #: Indices of the calls judged: world calls before any refusal, guesses left out.
    counted: list[int]
    #: Indices of calls that guessed a hidden slot the agent never asked about.
    guesses: list[int] = field(default_factory=list)

    @property
    def coverage(self) -> float | None:
        """Share of the expected nodes matched; ``None`` when nothing is expected."""
        return len(self.matched) / len(self.expected) if self.expected else None

    @property
    def precision(self) -> float | None:
        """Share of the counted calls that matched a node not matched before; ``None`` without calls."""
        return len(self.matched) / len(self.counted) if self.counted else None

    def covered(self) -> list[GoldCall]:
        """The matched part of the plan, dependencies through unmatched nodes made transitive."""
        return project(self.nodes, set(self.matched.values()))


def project(gold: list[GoldCall], keep: set[str]) -> list[GoldCall]:
    """The DAG restricted to the nodes in ``keep``; a dependency on a dropped node becomes a
    dependency on that node's nearest kept ancestors (so critical paths and widths stay meaningful)."""
    by_id = {g.id: g for g in gold}
    memo: dict[str, set[str]] = {}

    def kept_ancestors(node_id: str) -> set[str]:
        if node_id not in memo:
            out: set[str] = set()
            for dep in by_id[node_id].depends_on:
                if dep in by_id:
                    out |= {dep} if dep in keep else kept_ancestors(dep)
            memo[node_id] = out
        return memo[node_id]

    return [g.model_copy(update={"depends_on": sorted(kept_ancestors(g.id))}) for g in gold if g.id in keep]


def _hidden_value(value: Any, values: list[Any]) -> bool:
    """Whether a gold argument is (an element of) the value of one of these hidden slots."""
    return any(value == v or (isinstance(v, list) and value in v) for v in values)


def is_user_node(node: GoldCall, tools: dict[str, ToolSpec]) -> bool:
    spec = tools.get(node.tool)
    return node.match in ("ask", "confirm") or bool(spec and spec.user_channel)


def progress(task: Task, calls: list[dict[str, Any]], events: list[dict[str, Any]],
             tools: dict[str, ToolSpec]) -> Progress:
    """The episode's progress along ``task.gold`` (see the module docstring for every rule)."""
    world_ids = {g.id for g in task.gold if not is_user_node(g, tools)}
    nodes = project(task.gold, world_ids)
    asked = {s for e in events if e.get("type") == "ask" for s in e.get("slots", [])}
    unasked = [v for slot, v in task.hidden_slots.items() if slot not in asked]
    refusals = [e["call"] for e in events if e.get("type") == "confirm" and e.get("answer") == "no" and "call" in e]
    cut = min(refusals) if refusals else len(calls)

    roots = {g.id for g in task.gold
             if g.match == "args" and any(_hidden_value(v, unasked) for v in g.arguments.values())}
    if refusals:
        roots |= {g.id for g in task.gold if g.match == "confirm"}
    blocked = dependents(task.gold, roots)

    matched: dict[int, str] = {}
    counted: list[int] = []
    guesses: list[int] = []
    for i, call in enumerate(calls[:cut]):
        spec = tools.get(call["name"])
        if call["status"] == "skipped" or (spec and spec.user_channel):
            continue
        hit = next((g.id for g in nodes if g.id not in matched.values() and progress_match(g, call, tools)), None)
        if hit is not None:
            matched[i] = hit
        elif any(g.id in blocked and progress_match(g, call, tools, skip=lambda v: _hidden_value(v, unasked))
                 for g in nodes):
            guesses.append(i)
            continue
        counted.append(i)
    expected = frozenset({g.id for g in nodes if g.id not in blocked} | set(matched.values()))
    return Progress(nodes=nodes, expected=expected, matched=matched, counted=counted, guesses=guesses)
