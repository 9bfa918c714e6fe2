"""A protocol topology made concrete: the (transformed) suite, its parsed params, its tasks."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from topoeval.core.errors import UserError
from topoeval.core.paths import protocol_folder
from topoeval.core.suite import Split, Suite, Task
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import TopologySpec
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
    if spec.suite is None:
        raise UserError(f"topology '{spec.name}' names no suite")
    suite = apply_transforms(registry.get(spec.suite), spec.transforms)
    with protocol_folder(spec._folder):  # relative paths in params: from the protocol file's folder
        params = suite.parse_params(spec.params)
    tools, topology = suite.tools_for(params), suite.topology_for(params)
    if tools != suite.tools or topology != suite.manifest.topology:
        suite = SuiteView(suite, tools=tools, topology=topology)
    return ResolvedTopology(spec=spec, suite=suite, params=params)


def topology_from(topology: Any, protocol: Any = None, suites_dirs: list | tuple = ()) -> ResolvedTopology:
    """A resolved topology from any of the forms the training API accepts.

    ``topology``: a :class:`ResolvedTopology`; a :class:`TopologySpec` or a dict with ``suite``
    (and ``params``, ``transforms``); the name of a topology of ``protocol`` (train, test or ladder
    step); or, without a protocol, a suite name.
    """
    from topoeval.core.errors import UserError
    from topoeval.protocol.loader import load_protocol

    if isinstance(topology, ResolvedTopology):
        return topology
    registry = SuiteRegistry(suites_dirs)
    if isinstance(topology, dict):
        name = topology.get("name", topology.get("suite", "topology"))
        topology = TopologySpec.model_validate({"name": name, **topology})
    if isinstance(topology, TopologySpec):
        return resolve(topology, registry)
    if protocol is not None:
        proto = protocol if not isinstance(protocol, (str, Path)) else load_protocol(protocol, registry)
        specs = {t.name: t for t in proto.declared_topologies()}
        if topology not in specs:
            raise UserError(f"protocol '{proto.name}' has no topology '{topology}' (it has: {', '.join(specs)})")
        return resolve(specs[topology], registry)
    if topology in registry:
        return resolve(TopologySpec(name=topology, suite=topology), registry)
    raise UserError(f"unknown topology '{topology}': give a suite name, a topology spec, or a protocol that names it")


def task_set_hash(task_sets: dict[str, list[Task]]) -> str:
    """sha256 over every (topology, task fingerprint): equal hashes mean byte-identical task sets."""
    h = hashlib.sha256()
    for name in sorted(task_sets):
        for task in task_sets[name]:
            h.update(f"{name}\t{task.fingerprint()}\n".encode())
    return h.hexdigest()
