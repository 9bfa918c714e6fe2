"""Gold dependency DAGs from BFCL's ground truth.

Every ground-truth call is a node (``t<turn>c<k>``) tagged with the user turn that asks for it.
Calls of different turns are ordered by the turns themselves. Within a turn, call *b* depends on
an earlier call *a* when

- **state**: *a* and *b* act on the same API instance and do not commute — measured, not
  guessed: from the instance as it was just before *a* (ground truth replayed up to there), the
  two calls are executed in both orders on copies, and they commute when both orders give each
  call the same result and leave the same public state (two ``cat`` of different files, ``mkdir``
  of two new folders, two lookups commute; ``cd`` then ``ls``, a login then a post, two orders
  whose ids are numbered in sequence, two sensor reads drawing from one random generator do not);
  calls on different instances never share state; or
- **data flow**: a value in *b*'s arguments first appears in *a*'s result (a booking id, a
  token, a price), and not in what the user has said so far.

The DAG of a turn is then checked by replay: executing it as the oracle does (level by level,
independent calls together in ground-truth order) must give every call its ground-truth result and
end in the ground truth's state. A turn where it does not (a pairwise test can miss an order
effect of three calls) falls back to ordering every non-commuting pair of one API class, as
annotated (:func:`_annotated_conflict`). The parallelism metric compares an agent's tool-calling
turns with the critical path of this DAG.
"""

from __future__ import annotations

import copy
from typing import Any

from topoeval.core.suite import Effect, GoldCall, ToolSpec

from .calls import parse_call
from .world import BfclWorld, execute, instance_state


def _annotated_conflict(a: ToolSpec, b: ToolSpec) -> bool:
    """The fallback rule: two calls of one class conflict unless both are parallel-safe reads."""
    return not (a.effect == Effect.read and b.effect == Effect.read and a.parallel_safe and b.parallel_safe)


def _values(arguments: Any) -> list[str]:
    """Scalar argument values worth tracing through results (not booleans or tiny numbers)."""
    if isinstance(arguments, dict):
        return [v for x in arguments.values() for v in _values(x)]
    if isinstance(arguments, list):
        return [v for x in arguments for v in _values(x)]
    if isinstance(arguments, bool) or arguments is None:
        return []
    if isinstance(arguments, (int, float)):
        return [str(arguments)] if abs(arguments) >= 10 else []
    text = str(arguments)
    return [text] if len(text) >= 4 else []


def commute(instance: Any, owner: str, methods: dict[str, str], a: str, b: str) -> bool:
    """Whether call strings ``a`` and ``b`` commute on ``instance`` (of class ``owner``): both
    orders, each on a copy, give each call the same result and the same public state."""
    one, two = copy.deepcopy(instance), copy.deepcopy(instance)
    ab = (execute({owner: one}, methods, a), execute({owner: one}, methods, b))
    ba = (execute({owner: two}, methods, b), execute({owner: two}, methods, a))
    return ab == ba[::-1] and instance_state(one) == instance_state(two)


def gold_dag(task_data: dict[str, Any], specs: dict[str, ToolSpec], classes: dict[str, str],
             said: list[str]) -> list[GoldCall]:
    """The task's gold DAG. ``said[i]``: what the user has said up to and including turn ``i``."""
    world = BfclWorld(task_data)
    nodes: list[GoldCall] = []
    for turn, calls in enumerate(task_data["ground_truth"]):
        start = copy.deepcopy(world.reference)
        names = [parse_call(text)[0] for text in calls]
        before: list[Any] = []  # the call's own instance just before it, in ground-truth order
        results: list[str] = []
        for name, text in zip(names, calls):
            owner = world.methods.get(name)
            before.append(copy.deepcopy(world.reference[owner]) if owner else None)
            results.append(world._reference_call(text))
        end = {name: instance_state(inst) for name, inst in world.reference.items()}

        def flows(i: int, j: int) -> bool:
            return any(v in results[i] and v not in said[turn] for v in _values(parse_call(calls[j])[1]))

        def measured(i: int, j: int) -> bool:
            owner = world.methods.get(names[i])
            if owner is None or owner != world.methods.get(names[j]):
                return False
            return not commute(before[i], owner, world.methods, calls[i], calls[j])

        def annotated(i: int, j: int) -> bool:
            return classes[names[i]] == classes[names[j]] and _annotated_conflict(specs[names[i]], specs[names[j]])

        turn_nodes = _turn_nodes(turn, calls, names, lambda i, j: flows(i, j) or measured(i, j))
        if not _replays(turn_nodes, calls, start, world.methods, results, end):
            turn_nodes = _turn_nodes(turn, calls, names, lambda i, j: flows(i, j) or annotated(i, j))
        nodes += turn_nodes
    return _reduce(nodes)


def _turn_nodes(turn: int, calls: list[str], names: list[str], depends) -> list[GoldCall]:
    out = []
    for j, text in enumerate(calls):
        deps = [f"t{turn}c{i}" for i in range(j) if depends(i, j)]
        out.append(GoldCall(id=f"t{turn}c{j}", tool=names[j], arguments=parse_call(text)[1], depends_on=deps,
                            instruction=turn))
    return out


def _replays(turn_nodes: list[GoldCall], calls: list[str], start: dict[str, Any], methods: dict[str, str],
             results: list[str], end: dict[str, Any]) -> bool:
    """Executing the turn's DAG as the oracle does — each level's calls together, in ground-truth
    order — from the turn's starting state gives every call its ground-truth result and ends in the
    ground truth's state."""
    instances = copy.deepcopy(start)
    depth: dict[str, int] = {}
    for node in turn_nodes:  # ground-truth order is a topological order
        depth[node.id] = 1 + max((depth[d] for d in node.depends_on), default=-1)
    order = sorted(range(len(turn_nodes)), key=lambda k: (depth[turn_nodes[k].id], k))
    if any(execute(instances, methods, calls[k]) != results[k] for k in order):
        return False
    return {name: instance_state(inst) for name, inst in instances.items()} == end


def _reduce(nodes: list[GoldCall]) -> list[GoldCall]:
    """Drop dependencies implied by others (transitive reduction), so the DAG reads cleanly."""
    by_id = {n.id: n for n in nodes}
    reach: dict[str, set[str]] = {}

    def ancestors(node_id: str) -> set[str]:
        if node_id not in reach:
            out: set[str] = set()
            for d in by_id[node_id].depends_on:
                out |= {d} | ancestors(d)
            reach[node_id] = out
        return reach[node_id]

    out = []
    for n in nodes:
        implied = {a for d in n.depends_on for a in ancestors(d)}
        out.append(n.model_copy(update={"depends_on": [d for d in n.depends_on if d not in implied]}))
    return out
