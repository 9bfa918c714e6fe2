"""A protocol topology made concrete: the (transformed) suite, its parsed params, its tasks."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pydantic import BaseModel

from topoeval.discovery import SuiteRegistry
from topoeval.protocol import TopologySpec
from topoeval.suite import Split, Suite, Task
from topoeval.transforms import SuiteView, apply_transforms


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
    """Apply the transforms, parse the params, and fix the tool list and topology they give."""
    suite = apply_transforms(registry.get(spec.suite), spec.transforms)
    params = suite.parse_params(spec.params)
    tools, topology = suite.tools_for(params), suite.topology_for(params)
    if tools != suite.tools or topology != suite.manifest.topology:
        suite = SuiteView(suite, tools=tools, topology=topology)
    return ResolvedTopology(spec=spec, suite=suite, params=params)


def task_set_hash(task_sets: dict[str, list[Task]]) -> str:
    """sha256 over every (topology, task fingerprint): equal hashes mean byte-identical task sets."""
    h = hashlib.sha256()
    for name in sorted(task_sets):
        for task in task_sets[name]:
            h.update(f"{name}\t{task.fingerprint()}\n".encode())
    return h.hexdigest()
