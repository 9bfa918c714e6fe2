"""A protocol topology made concrete: the (transformed) suite, its parsed params, its tasks."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pydantic import BaseModel

from topoeval.discovery import SuiteRegistry
from topoeval.protocol import TopologySpec
from topoeval.suite import Split, Suite, Task
from topoeval.transforms import apply_transforms


@dataclass
class ResolvedTopology:
    spec: TopologySpec
    suite: Suite
    params: BaseModel

    @property
    def name(self) -> str:
        return self.spec.name

    def tasks(self, split: Split, seed: int, n: int) -> list[Task]:
        return self.suite.tasks(self.params, split, seed, n)

    def system_prompt(self) -> str:
        return self.suite.system_prompt(self.params)


def resolve(spec: TopologySpec, registry: SuiteRegistry) -> ResolvedTopology:
    suite = apply_transforms(registry.get(spec.suite), spec.transforms)
    return ResolvedTopology(spec=spec, suite=suite, params=suite.parse_params(spec.params))


def task_set_hash(task_sets: dict[str, list[Task]]) -> str:
    """sha256 over every (topology, task fingerprint): equal hashes mean byte-identical task sets."""
    h = hashlib.sha256()
    for name in sorted(task_sets):
        for task in task_sets[name]:
            h.update(f"{name}\t{task.fingerprint()}\n".encode())
    return h.hexdigest()
