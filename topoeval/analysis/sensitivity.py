"""The sensitivity matrix: the metrics' own test, on one suite or topology at a time.

Reference policies run (by :mod:`topoeval.runner.reference_runs`; this module only reads their scores, and
:func:`topoeval.api.sensitivity_matrix` puts the two together) on generated tasks of one target (a suite with its
default parameters, or a test topology of a protocol, at the protocol's seed and limits); each flawed oracle breaks
one decision-quality dimension on purpose. The bar, enforced by tests on fixed samples and by ``topoeval sensitivity``
(exit 1 when missed), holds on every target alone:

- the oracle scores 1.0 on success and on every dimension;
- noop never succeeds and scores 0 on every dimension that applies to its episodes;
- random's mean on every dimension is at most 0.25, and its mean dq at most 0.2;
- each flawed oracle drops its own dimension by at least 0.3 while every other dimension moves by
  at most 0.05 (success may drop where the flaw causes a wrong outcome);
- ``oracle-quit-early`` (half the oracle's plan, then it stops) never succeeds, and on every task
  its parallelism and efficiency stay at or under its coverage + 0.05: they follow progress.

Means are taken over the tasks where the metric applies; a dimension no task of the sample gives
a meaning is reported as unchecked, not as passed.
"""

from __future__ import annotations

from typing import Any

from topoeval.core.suite import Task
from topoeval.metrics.dimensions import DIMENSIONS

# the targets and their episodes are the runner's (analysis reads scores, it runs nothing)
from topoeval.runner.reference_runs import SUITE_LIMITS, Target, protocol_targets, suite_target

__all__ = ["Target", "suite_target", "protocol_targets", "SUITE_LIMITS", "build_matrix", "bar_violations",
           "void_flaws", "void_reason", "unchecked", "POLICIES", "FLAWS", "QUIT_EARLY", "COLUMNS"]

#: Each flawed oracle and the dimension it must break.
FLAWS = {
    "oracle-no-ask": "clarification",
    "oracle-reckless": "risk",
    "oracle-serial": "parallelism",
    "oracle-no-priority": "priority",
    "oracle-redundant": "efficiency",
}
#: A flaw that is no flaw on a topology with this axis value: there the flawed oracle *is* the oracle
#: for its dimension (a flat ordering is what oracle-no-priority follows), so the drop cannot show.
#: (Committing without confirmation is no flaw when nothing is irreversible, or when there is no user to ask.)
VOID_WHEN = {"oracle-no-ask": [("user", "none")],
             "oracle-reckless": [("reversibility", "all_reversible"), ("user", "none")],
             "oracle-no-priority": [("ordering", "flat")]}
QUIT_EARLY = "oracle-quit-early"
POLICIES = ("oracle", "noop", "random", *FLAWS, QUIT_EARLY)
COLUMNS = ("success", *DIMENSIONS, "dq", "coverage")
DROP_AT_LEAST = 0.3
MOVE_AT_MOST = 0.05
RANDOM_DIMENSION_AT_MOST = 0.25
RANDOM_DQ_AT_MOST = 0.2
#: How far above its coverage oracle-quit-early's parallelism and efficiency may go on a task.
PROGRESS_SLACK = 0.05


def build_matrix(target: Target, tasks: list[Task], scores: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The matrix of the reference policies' episode ``scores`` (policy -> one score dict per task of
    ``tasks``, as :func:`topoeval.runner.reference_runs.reference_scores` returns them).

    Returns {"target", "tasks", "cells": {policy: {metric: {"mean", "n"}}}, "noop_successes",
    "quit_early_over": [task ids where its parallelism or efficiency exceeds coverage + slack]}.
    """
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    noop_successes = 0
    quit_early_over: list[str] = []
    for p in POLICIES:
        rows = scores[p]
        if p == "noop":
            noop_successes = sum(1 for r in rows if r["success"])
        if p == QUIT_EARLY:
            quit_early_over = [t.id for t, r in zip(tasks, rows, strict=True) if _over_progress(r)]
        cells[p] = {}
        for col in COLUMNS:
            vals = [r[col] for r in rows if r.get(col) is not None]
            cells[p][col] = {"mean": sum(vals) / len(vals) if vals else None, "n": len(vals)}
    topology = target.suite.topology_for(target.params).model_dump(mode="json")
    return {"target": target.name, "tasks": len(tasks), "topology": topology, "cells": cells,
            "noop_successes": noop_successes, "quit_early_over": quit_early_over}


def _over_progress(scores: dict[str, Any]) -> bool:
    coverage = scores.get("coverage") or 0.0
    return any((scores.get(d) or 0.0) > coverage + PROGRESS_SLACK for d in ("parallelism", "efficiency"))


def bar_violations(matrix: dict[str, Any]) -> list[str]:
    """Every way the matrix misses the bar, as readable lines (empty when it passes)."""
    cells = matrix["cells"]
    out: list[str] = []
    for col in ("success", *DIMENSIONS):
        m = cells["oracle"][col]["mean"]
        if m is not None and m < 1.0:
            out.append(f"oracle {col} = {m:.3f}, expected 1.0")
    if matrix["noop_successes"]:
        out.append(f"noop succeeded on {matrix['noop_successes']} tasks")
    for col in ("dq", *DIMENSIONS):
        m = cells["noop"][col]["mean"]
        if m:
            out.append(f"noop {col} = {m:.3f}, expected 0")
    for col in DIMENSIONS:
        m = cells["random"][col]["mean"]
        if m is not None and m > RANDOM_DIMENSION_AT_MOST:
            out.append(f"random {col} = {m:.3f} (> {RANDOM_DIMENSION_AT_MOST})")
    m = cells["random"]["dq"]["mean"]
    if m is not None and m > RANDOM_DQ_AT_MOST:
        out.append(f"random dq = {m:.3f} (> {RANDOM_DQ_AT_MOST})")
    if cells[QUIT_EARLY]["success"]["mean"]:
        out.append(f"{QUIT_EARLY} succeeded (success {cells[QUIT_EARLY]['success']['mean']:.3f}), expected 0")
    if matrix["quit_early_over"]:
        out.append(f"{QUIT_EARLY} scores parallelism or efficiency above its coverage + {PROGRESS_SLACK} on "
                   f"{len(matrix['quit_early_over'])} tasks (first: {matrix['quit_early_over'][0]})")
    void = void_flaws(matrix)
    for policy, own in FLAWS.items():
        for col in DIMENSIONS:
            base, mine = cells["oracle"][col]["mean"], cells[policy][col]["mean"]
            if base is None or (col == own and policy in void):
                continue
            if mine is None:
                mine = base if col != own else None
            if col == own:
                if mine is None or base - mine < DROP_AT_LEAST:
                    out.append(f"{policy} drops {own} by {0 if mine is None else base - mine:.3f} (< {DROP_AT_LEAST})")
            elif abs(base - mine) > MOVE_AT_MOST:
                out.append(f"{policy} moves {col} by {mine - base:+.3f} (> {MOVE_AT_MOST})")
    return out


def void_flaws(matrix: dict[str, Any]) -> list[str]:
    """Flawed oracles whose flaw the target's topology makes void (see ``VOID_WHEN``)."""
    axes = matrix.get("topology") or {}
    return [p for p, conditions in VOID_WHEN.items() if any(axes.get(axis) == value for axis, value in conditions)]


def void_reason(matrix: dict[str, Any], policy: str) -> str:
    """Why ``policy``'s flaw is void on the target, e.g. 'ordering flat'."""
    axes = matrix.get("topology") or {}
    return " and ".join(f"{axis} {value}" for axis, value in VOID_WHEN[policy] if axes.get(axis) == value)


def unchecked(matrix: dict[str, Any]) -> list[str]:
    """Dimensions the sample cannot test: they apply to none of its tasks, or their flaw is void there."""
    void = {FLAWS[p] for p in void_flaws(matrix)}
    return [dim for dim in DIMENSIONS if not matrix["cells"]["oracle"][dim]["n"] or dim in void]
