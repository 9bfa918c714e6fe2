"""Exporting a protocol's tasks for RL trainers, and checking evaluations against what was trained on.

``topoeval export PROTOCOL --split train --out DIR`` writes ``DIR/<split>.parquet`` — one row per
task of the train topology (or ``--topology NAME``) — and ``DIR/topoeval_export.json`` (protocol
and task-set hashes, every task's fingerprint). Columns follow the ``verifiers`` conventions, plus
what verl reads:

| column | content |
|---|---|
| ``id`` | task id |
| ``prompt`` | chat messages: the topology's system prompt, then the task's (first) user message |
| ``instructions`` | JSON: a multi-turn task's later user instructions, in order (``content``, ``tools_added``); ``[]`` for one-instruction tasks. A trainer sends the next one each time the model answers without a tool call (the Gymnasium env and :func:`topoeval.reward` do this themselves) |
| ``answer`` | the gold answer (text tasks) or the expected state change as JSON (state tasks) |
| ``info`` | JSON: ``topoeval_task`` (the full task, for :func:`topoeval.reward`), ``topology`` (suite, params, transforms), protocol, split, hashes |
| ``tools`` | JSON: the tools offered when the task starts, in OpenAI format (a task may withhold some until a later instruction) |
| ``topology`` | the topology name |

(verifiers reserves ``info["task"]`` and a ``task`` column for its own task payloads, hence the names.)
| ``data_source`` / ``reward_model`` | verl's fields: ``topoeval/<protocol>/<topology>`` and ``{"style": "rule", "ground_truth": answer}`` |

The train, dev, test and fewshot splits are disjoint by construction; a run given
``--trained-on DIR`` still checks, by fingerprint, that none of its evaluated tasks is among the
exported ones, and warns (and records it in run.json) if any is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from topoeval.core.errors import UserError
from topoeval.core.files import write_json_atomic
from topoeval.core.parquet import write_rows
from topoeval.core.suite import Split, Task, canonical_json
from topoeval.core.version import __version__
from topoeval.protocol.schema import Protocol
from topoeval.protocol.topology import ResolvedTopology, task_set_hash, topology_from
from topoeval.runner.contamination import MANIFEST


def _answer(task: Task) -> str:
    return task.answer if task.answer is not None else canonical_json(task.expected_state or {})


def export_rows(protocol: Protocol, topo: ResolvedTopology, tasks: list[Task], split: str, p_hash: str,
                t_hash: str) -> list[dict[str, Any]]:
    """The dataset rows of ``tasks`` (see the module docstring)."""
    system = topo.system_prompt()
    all_tools = json.dumps([t.openai() for t in topo.suite.tools], ensure_ascii=False)
    spec = topo.spec.model_dump(mode="json", include={"name", "suite", "params", "transforms"})
    rows = []
    for task in tasks:
        answer = _answer(task)
        info = {"topoeval_task": task.model_dump(mode="json"), "topology": spec, "protocol": protocol.name,
                "protocol_sha256": p_hash, "task_set_sha256": t_hash, "split": split}
        rows.append({
            "id": task.id,
            "prompt": [{"role": "system", "content": system}, {"role": "user", "content": task.prompt}],
            "answer": answer,
            "info": json.dumps(info, ensure_ascii=False),
            "instructions": json.dumps([i.model_dump(mode="json") for i in task.instructions], ensure_ascii=False),
            "tools": all_tools if not task.withheld_tools else json.dumps(
                [t.openai() for t in topo.suite.tools if t.name not in set(task.withheld_tools)], ensure_ascii=False),
            "topology": topo.name,
            "data_source": f"topoeval/{protocol.name}/{topo.name}",
            "reward_model": {"style": "rule", "ground_truth": answer},
        })
    return rows


def _suite_protocol(suite: str, split: str, n: int | None, seed: int) -> Protocol:
    """A one-topology protocol around a bare suite (``topoeval export SUITE``)."""
    if n is None:
        raise UserError(f"exporting the suite '{suite}' needs a task count, n (topoeval export --tasks); "
                        "a protocol would give it")
    spec = {"name": suite, "suite": suite}
    return Protocol.model_validate({"name": f"suite-{suite}", "train": spec, "test": [{**spec, "role": "id"}],
                                    "tasks": {"test": {"n": 1}, split: {"n": n, "seed": seed}}})


@dataclass
class Selection:
    """The tasks of one split of one topology of a protocol, with the hashes that identify them."""

    protocol: Protocol
    topology: ResolvedTopology
    split: str
    n: int
    seed: int
    tasks: list[Task]
    protocol_sha256: str
    task_set_sha256: str

    def rows(self) -> list[dict[str, Any]]:
        return export_rows(self.protocol, self.topology, self.tasks, self.split, self.protocol_sha256,
                           self.task_set_sha256)


def select_tasks(protocol: Any, *, split: str = "train", n: int | None = None, topology: str | None = None,
                 seed: int = 0, suites_dirs: list | tuple = ()) -> Selection:
    """``split`` of the protocol's train topology (or ``topology``): ``n`` tasks (default: the
    protocol's count for the split). ``protocol`` may also be a suite name: its default topology,
    ``n`` tasks from ``seed``."""
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.protocol.loader import load_protocol, protocol_hash

    registry = SuiteRegistry(suites_dirs)
    if isinstance(protocol, Protocol):
        proto = protocol
    elif isinstance(protocol, str) and protocol in registry and not _is_protocol(protocol):
        proto = _suite_protocol(protocol, split, n, seed)
    else:
        proto = load_protocol(protocol, registry)
    counts = getattr(proto.tasks, split, None)
    if n is None:
        if counts is None:
            raise UserError(f"protocol '{proto.name}' sets no tasks.{split}; give n (topoeval export --tasks)")
        n = counts.n
    seed = counts.seed if counts is not None else 0
    topo = topology_from(topology or proto.train_topology().name, proto, suites_dirs)
    tasks = topo.tasks(cast(Split, split), seed, n)
    return Selection(proto, topo, split, n, seed, tasks, protocol_hash(proto), task_set_hash({topo.name: tasks}))


def export_tasks(protocol: Any, out: str | Path, *, split: str = "train", n: int | None = None,
                 topology: str | None = None, seed: int = 0, suites_dirs: list | tuple = ()) -> Path:
    """Write the :func:`select_tasks` selection to ``out``; returns the parquet path."""
    sel = select_tasks(protocol, split=split, n=n, topology=topology, seed=seed, suites_dirs=suites_dirs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = write_rows(sel.rows(), out / f"{split}.parquet")
    manifest = {"protocol": sel.protocol.name, "protocol_sha256": sel.protocol_sha256, "topology": sel.topology.name,
                "split": split, "n": sel.n, "seed": sel.seed, "task_set_sha256": sel.task_set_sha256,
                "topoeval_version": __version__, "fingerprints": sorted(t.fingerprint() for t in sel.tasks)}
    write_json_atomic(out / MANIFEST, manifest, indent=1)
    return path


def _is_protocol(name: str) -> bool:
    from topoeval.protocol.discovery import resolve_protocol_path

    try:
        resolve_protocol_path(name)
    except UserError:
        return False
    return True
