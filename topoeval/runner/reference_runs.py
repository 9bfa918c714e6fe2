"""Episodes of the reference policies on one suite or topology, outside a run folder: what the
sensitivity matrix (:mod:`topoeval.analysis.sensitivity`) is computed from. The analysis layer only
reads the scores; running the episodes is this module's job (``topoeval.api.sensitivity_matrix``
puts the two together)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from topoeval.core.policy import SamplingParams
from topoeval.core.suite import Suite, Task
from topoeval.policies.registry import make_policy
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import Limits
from topoeval.protocol.topology import resolve
from topoeval.runner.episode import run_episode

#: Limits for a bare suite (generous: the reference policies never need them).
SUITE_LIMITS = Limits(max_turns=30, max_tool_calls=60)


@dataclass
class Target:
    """One suite or topology the matrix is measured on."""

    #: Shown in the table title: the suite name, or ``protocol/topology``.
    name: str
    suite: Suite
    params: BaseModel
    seed: int
    limits: Limits


def suite_target(name: str, registry: SuiteRegistry, seed: int = 0) -> Target:
    """A suite with its default parameters."""
    suite = registry.get(name)
    return Target(name=name, suite=suite, params=suite.parse_params({}), seed=seed, limits=SUITE_LIMITS)


def protocol_targets(protocol: Any, registry: SuiteRegistry) -> list[Target]:
    """Every topology a protocol evaluates — its test topologies (ID, OOD) and ladder steps — at its
    test seed and limits: the zero-shot cells the reference policies get in ``topoeval run``."""
    out = []
    for spec in protocol.topologies():
        topo = resolve(spec, registry)
        out.append(Target(name=f"{protocol.name}/{spec.name}", suite=topo.suite, params=topo.params,
                          seed=protocol.tasks.test.seed, limits=protocol.limits))
    return out


def target_tasks(target: Target, n_tasks: int) -> list[Task]:
    """``n_tasks`` test tasks of ``target`` (all of them when its suite has a fixed set that holds fewer)."""
    pool = target.suite.pool_size(target.params, "test")
    return target.suite.tasks(target.params, "test", target.seed, n_tasks if pool is None else min(n_tasks, pool))


def reference_scores(target: Target, tasks: list[Task],
                     policies: tuple[str, ...] | list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each reference policy's episode scores on ``tasks`` (one sample, zero shots), in task order."""

    async def scores(policy_name: str) -> list[dict[str, Any]]:
        policy = make_policy(policy_name)
        out = []
        for task in tasks:
            rec = await run_episode(
                policy=policy, suite=target.suite, task=task, system_prompt="", demos=[], limits=target.limits,
                sampling=SamplingParams(), sample=0, shots=0, labels={},
            )
            out.append(rec["scores"])
        return out

    return {p: asyncio.run(scores(p)) for p in policies}
