"""Gold dependency DAGs from BFCL's ground truth.

Every ground-truth call is a node (``t<turn>c<k>``) tagged with the user turn that asks for it.
Within a turn, call *b* depends on an earlier call *a* when

- both act on the same API class and they do not commute: one of them changes state, or one is
  a read that is not ``parallel_safe`` (a sensor drawing from the class's random generator); or
- a value in *b*'s arguments first appears in *a*'s result (data flow: a booking id, a token, a
  price), and not in what the user has said so far.

Calls of different turns are ordered by the turns themselves. The oracle executes the DAG level
by level (independent calls in one assistant turn, in ground-truth order), so it reproduces every
ground-truth result; the parallelism metric compares an agent's tool-calling turns with the
critical path of this DAG.
"""

from __future__ import annotations

from typing import Any

from topoeval.core.suite import Effect, GoldCall, ToolSpec

from .calls import parse_call
from .world import BfclWorld


def _commutes(a: ToolSpec, b: ToolSpec) -> bool:
    return a.effect == Effect.read and b.effect == Effect.read and a.parallel_safe and b.parallel_safe


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


def gold_dag(task_data: dict[str, Any], specs: dict[str, ToolSpec], classes: dict[str, str],
             said: list[str]) -> list[GoldCall]:
    """The task's gold DAG. ``said[i]``: what the user has said up to and including turn ``i``."""
    world = BfclWorld(task_data)
    nodes: list[GoldCall] = []
    for turn, calls in enumerate(task_data["ground_truth"]):
        results: list[str] = []
        turn_nodes: list[tuple[GoldCall, ToolSpec]] = []
        for k, text in enumerate(calls):
            name, arguments = parse_call(text)
            spec = specs[name]
            deps = []
            for (prev, prev_spec), result in zip(turn_nodes, results):
                same_class = classes[prev.tool] == classes[name]
                flows = any(v in result and v not in said[turn] for v in _values(arguments))
                if (same_class and not _commutes(prev_spec, spec)) or flows:
                    deps.append(prev.id)
            node = GoldCall(id=f"t{turn}c{k}", tool=name, arguments=arguments, depends_on=deps, instruction=turn)
            turn_nodes.append((node, spec))
            results.append(world._reference_call(text))
        nodes += [n for n, _ in turn_nodes]
    return _reduce(nodes)


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
