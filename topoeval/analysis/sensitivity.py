"""The sensitivity matrix: the metrics' own test.

Reference policies run on generated tasks; each flawed oracle breaks one decision-quality
dimension on purpose. The bar (enforced by a test on a fixed sample and by
``topoeval sensitivity``): the oracle scores 1.0 on success and on every dimension, noop scores 0
on success on every task, and each flawed oracle drops its own dimension by at least 0.3 while
every other dimension moves by at most 0.05 (success may drop where the flaw causes a wrong
outcome). Means are taken over the tasks where the dimension applies.
"""

from __future__ import annotations

import asyncio
from typing import Any

from topoeval.protocol.discovery import SuiteRegistry
from topoeval.metrics.dimensions import DIMENSIONS
from topoeval.core.policy import SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import run_episode

#: Each flawed oracle and the dimension it must break.
FLAWS = {
    "oracle-no-ask": "clarification",
    "oracle-reckless": "risk",
    "oracle-serial": "parallelism",
    "oracle-no-priority": "priority",
    "oracle-redundant": "efficiency",
}
POLICIES = ("oracle", "noop", *FLAWS)
COLUMNS = ("success", *DIMENSIONS)
DROP_AT_LEAST = 0.3
MOVE_AT_MOST = 0.05


def run_matrix(suites: list[str], n_tasks: int, seed: int = 0, registry: SuiteRegistry | None = None) -> dict[str, Any]:
    """{"cells": {policy: {metric: {"mean", "n"}}}, "noop_successes": int, "tasks": int}."""
    registry = registry or SuiteRegistry()
    tasks = []
    for name in suites:
        suite = registry.get(name)
        tasks += [(suite, t) for t in suite.tasks(suite.parse_params({}), "test", seed, n_tasks)]

    async def scores(policy_name: str) -> list[dict[str, Any]]:
        policy = make_policy(policy_name)
        out = []
        for suite, task in tasks:
            rec = await run_episode(
                policy=policy, suite=suite, task=task, system_prompt="", demos=[], limits=Limits(max_turns=30, max_tool_calls=60),
                sampling=SamplingParams(), sample=0, shots=0, labels={},
            )
            out.append(rec["scores"])
        return out

    cells: dict[str, dict[str, dict[str, Any]]] = {}
    noop_successes = 0
    for p in POLICIES:
        rows = asyncio.run(scores(p))
        if p == "noop":
            noop_successes = sum(1 for r in rows if r["success"])
        cells[p] = {}
        for col in COLUMNS:
            vals = [r[col] for r in rows if r.get(col) is not None]
            cells[p][col] = {"mean": sum(vals) / len(vals) if vals else None, "n": len(vals)}
    return {"cells": cells, "noop_successes": noop_successes, "tasks": len(tasks)}


def bar_violations(matrix: dict[str, Any]) -> list[str]:
    """Every way the matrix misses the bar, as readable lines (empty when it passes)."""
    cells = matrix["cells"]
    out: list[str] = []
    for col in COLUMNS:
        m = cells["oracle"][col]["mean"]
        if m is not None and m < 1.0:
            out.append(f"oracle {col} = {m:.3f}, expected 1.0")
    if matrix["noop_successes"]:
        out.append(f"noop succeeded on {matrix['noop_successes']} tasks")
    for policy, own in FLAWS.items():
        for col in DIMENSIONS:
            base, mine = cells["oracle"][col]["mean"], cells[policy][col]["mean"]
            if base is None:
                continue
            if mine is None:
                mine = base if col != own else None
            if col == own:
                if mine is None or base - mine < DROP_AT_LEAST:
                    out.append(f"{policy} drops {own} by {0 if mine is None else base - mine:.3f} (< {DROP_AT_LEAST})")
            elif abs(base - mine) > MOVE_AT_MOST:
                out.append(f"{policy} moves {col} by {mine - base:+.3f} (> {MOVE_AT_MOST})")
    return out


def unchecked(matrix: dict[str, Any]) -> list[str]:
    """Dimensions the sample cannot test: they apply to none of its tasks."""
    return [dim for dim in DIMENSIONS if not matrix["cells"]["oracle"][dim]["n"]]
