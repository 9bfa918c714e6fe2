"""A run's test tasks without holding them: each topology's task ids and the task set's hash from one
pass over the generator, and each task made again when its episodes run.

A suite's ``generate(params, split, seed, index)`` is a pure function of its arguments, so a task
need not be kept from the pass that hashes the set to the episode that runs it: a run of 100,000 tasks
holds their ids (tens of bytes each), not their worlds (a wiki task carries ~5 KB of pages).

A resumed run reads the ids and the hash back from ``tasks.json`` in the run folder instead of making
every task again (minutes at 100,000 tasks), once a few tasks made again here (the first, the last
and a seeded sample of each topology) match the fingerprints recorded there; any difference, or a
different suite version, parameters or size, and the whole set is made again and hashed as on a new run.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topoeval.core.files import write_json_atomic
from topoeval.core.suite import Task
from topoeval.core.version import __version__
from topoeval.protocol.topology import ResolvedTopology

#: the run folder's record of its task set (ids, hash, the fingerprints a resume checks)
TASKS_JSON = "tasks.json"
#: tasks of each topology a resume makes again and compares with the recorded fingerprints
SPOT_CHECKS = 8


@dataclass
class TopologyTasks:
    """One topology's test tasks of a run: their ids in order, each task made on demand."""

    topology: ResolvedTopology
    #: the test split's seed
    seed: int
    #: every task's id, in task order
    ids: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    def task(self, index: int) -> Task:
        """The task at ``index`` (made again: the same task the set's hash covers)."""
        return self.topology.suite.generate(self.topology.params, "test", self.seed, index)


@dataclass
class TaskCatalogue:
    """Every topology's tasks and the task set's sha256 (:func:`topoeval.protocol.topology.task_set_hash`)."""

    topologies: dict[str, TopologyTasks]
    sha256: str
    #: every task's fingerprint, when asked for (a contamination check against training exports)
    fingerprints: set[str] | None = None
    #: whether the ids came from the run folder's tasks.json (a resume) rather than a pass over every task
    reused: bool = False
    #: what tasks.json holds (the spec the set is made from, its hash, ids and spot-check fingerprints)
    record: dict[str, Any] | None = None


def build_catalogue(topologies: Iterable[ResolvedTopology], seed: int, counts: dict[str, int],
                    run_dir: Path | None = None, fingerprints: bool = False) -> TaskCatalogue:
    """The run's tasks: from ``run_dir``'s tasks.json when it holds this very task set (checked), else one
    pass over every task. ``counts``: tasks per topology; ``fingerprints``: also keep every task's
    fingerprint (always a full pass)."""
    topos = {t.name: t for t in topologies}
    for topo in topos.values():  # a fixed pool asked for too many: its suite's one line, in protocol order
        pool = topo.suite.pool_size(topo.params, "test")
        if pool is not None and counts[topo.name] > pool:
            topo.suite.generate(topo.params, "test", seed, counts[topo.name] - 1)
    spec = _spec(topos, seed, counts)
    if run_dir is not None and not fingerprints:
        reused = _reuse(run_dir / TASKS_JSON, spec, topos, seed)
        if reused is not None:
            return reused
    h = hashlib.sha256()
    ids: dict[str, list[str]] = {}
    checks: dict[str, dict[str, str]] = {}
    seen: set[str] | None = set() if fingerprints else None
    for name in sorted(topos):  # the order task_set_hash hashes in
        topo, picks = topos[name], _picks(counts[name])
        ids[name], checks[name] = [], {}
        for i, task in enumerate(topo.suite.iter_tasks(topo.params, "test", seed, counts[name])):
            fp = task.fingerprint()
            h.update(f"{name}\t{fp}\n".encode())
            ids[name].append(task.id)
            if i in picks:
                checks[name][str(i)] = fp
            if seen is not None:
                seen.add(fp)
    sha256 = h.hexdigest()
    return TaskCatalogue(topologies={name: TopologyTasks(topos[name], seed, ids[name]) for name in topos},
                         sha256=sha256, fingerprints=seen,
                         record={"spec": spec, "sha256": sha256, "ids": ids, "checks": checks})


def save_catalogue(run_dir: Path, catalogue: TaskCatalogue) -> None:
    """Write tasks.json (what a resume reads instead of making every task again)."""
    if catalogue.record is not None and not catalogue.reused:
        write_json_atomic(run_dir / TASKS_JSON, catalogue.record, indent=None)


def _spec(topos: dict[str, ResolvedTopology], seed: int, counts: dict[str, int]) -> dict[str, Any]:
    """What the task set is made from: each topology's suite, its version, parameters and size, the seed."""
    return {"topoeval": __version__, "seed": seed, "topologies": {
        name: {"suite": t.suite.name, "version": t.suite.behaviour_version(), "n": counts[name],
               "params": t.params.model_dump(mode="json") if hasattr(t.params, "model_dump") else repr(t.params),
               "transforms": [tr.model_dump(mode="json") if hasattr(tr, "model_dump") else repr(tr)
                              for tr in (t.spec.transforms or [])]}
        for name, t in sorted(topos.items())}}


def _picks(n: int) -> set[int]:
    """The task indices a resume makes again: the first, the last and a seeded sample."""
    if n <= 0:
        return set()
    rng = random.Random(n)
    return {0, n - 1, *(rng.randrange(n) for _ in range(SPOT_CHECKS - 2))}


def _reuse(path: Path, spec: dict[str, Any], topos: dict[str, ResolvedTopology], seed: int) -> TaskCatalogue | None:
    """The catalogue recorded in ``path`` when it was made from ``spec`` and its spot checks hold, else None."""
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("spec") != spec:
        return None
    ids, checks = record.get("ids") or {}, record.get("checks") or {}
    for name, topo in topos.items():
        if len(ids.get(name, ())) != spec["topologies"][name]["n"]:
            return None
        for index, fp in (checks.get(name) or {}).items():
            task = topo.suite.generate(topo.params, "test", seed, int(index))
            if task.fingerprint() != fp or task.id != ids[name][int(index)]:
                return None
    return TaskCatalogue(topologies={name: TopologyTasks(topos[name], seed, ids[name]) for name in topos},
                         sha256=record["sha256"], reused=True, record=record)
