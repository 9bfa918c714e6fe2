"""``topoeval export PROTOCOL --for verl|skyrl --out DIR``: a protocol's topologies as a trainer's datasets.

- ``DIR/train.parquet``: the train topology's train split (the protocol's count and seed);
- ``DIR/val_<topology>.parquet``: one file per test topology (and per ladder step with a topology of
  its own), its test split — so a trainer's own per-``data_source`` validation during training is
  topoeval's in-distribution / out-of-distribution transfer curve (and its ladder);
- ``DIR/topoeval_export.json``: protocol and task-set hashes and every exported task's fingerprint
  (``topoeval run --trained-on DIR`` checks that no evaluated task was trained on).

Every row carries ``data_source`` = the topology's name, ``prompt`` = the episode's opening chat
messages (system prompt with the tools in the row's tool-call format, the task's user turn), and
``extra_info`` — what the env needs: the task itself (``topoeval_task``, JSON), the topology
(``topology_spec``, JSON), ``tool_format``, the reward ``metric``, the protocol's ``max_turns`` and
``max_tool_calls``, ``split`` and ``index``. verl rows add ``agent_name: topoeval`` and
``reward_model``; SkyRL rows add ``env_class: topoeval`` and ``reward_spec`` (SkyRL hands the env every
other column as its extras).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.parquet import write_rows
from topoeval.core.suite import Task, canonical_json
from topoeval.core.version import __version__
from topoeval.formats import ToolFormat
from topoeval.integrations.text_episode import TextEpisode, episode_format, opening
from topoeval.protocol.schema import Limits
from topoeval.protocol.topology import ResolvedTopology
from topoeval.runner.contamination import MANIFEST
from topoeval.training.export import Selection, select_tasks

TARGETS = ("verl", "skyrl")
AGENT_NAME = "topoeval"
ENV_CLASS = "topoeval"


def _answer(task: Task) -> str:
    return task.answer if task.answer is not None else canonical_json(task.expected_state or {})


def episode_info(topo: ResolvedTopology, task: Task, *, split: str, index: int, limits: Limits, fmt: ToolFormat,
                 metric: str | dict[str, float] = "success", protocol: str = "") -> dict[str, Any]:
    """A row's ``extra_info``: everything :meth:`TextEpisode.from_row` needs to play ``task`` (module docstring)."""
    spec = topo.spec.model_dump(mode="json", include={"name", "suite", "params", "transforms"})
    return {"index": index, "split": split, "protocol": protocol, "topology": topo.name, "tool_format": fmt.name,
            "metric": metric if isinstance(metric, str) else json.dumps(metric), "max_turns": limits.max_turns,
            "max_tool_calls": limits.max_tool_calls,
            "max_turns_per_instruction": limits.max_turns_per_instruction or 0, "task_id": task.id,
            "topoeval_task": json.dumps(task.model_dump(mode="json"), ensure_ascii=False),
            "topology_spec": json.dumps(spec, ensure_ascii=False)}


def trainer_row(topo: ResolvedTopology, task: Task, info: dict[str, Any], target: str) -> dict[str, Any]:
    """One row for ``target`` (``verl`` or ``skyrl``) from the task and its ``extra_info``."""
    fmt = episode_format(topo, info["tool_format"])
    row: dict[str, Any] = {"data_source": topo.name, "prompt": opening(topo, task, fmt)}
    if target == "verl":
        row.update(agent_name=AGENT_NAME, ability="agent",
                   reward_model={"style": "rule", "ground_truth": _answer(task)}, extra_info=info)
    else:
        row.update(env_class=ENV_CLASS, reward_spec={"method": "rule", "ground_truth": _answer(task)}, extra_info=info)
    return row


def trainer_rows(sel: Selection, target: str, *, tool_format: str = "hermes",
                 metric: str | dict[str, float] = "success") -> list[dict[str, Any]]:
    """The rows of a selection for ``target`` (``verl`` or ``skyrl``; see the module docstring)."""
    if target not in TARGETS:
        raise UserError(f"unknown trainer '{target}' (known: {', '.join(TARGETS)})")
    topo = sel.topology
    fmt = episode_format(topo, tool_format)
    if target == "skyrl" and fmt.native:
        raise UserError("SkyRL's text env cannot hand tools to the chat template: choose a prompt format "
                        "(hermes, search-r1, react, json), not native")
    rows = []
    for index, task in enumerate(sel.tasks):
        if not fmt.native:
            fmt.check([t.openai() for t in topo.suite.tools if t.name not in set(task.withheld_tools)])
        info = episode_info(topo, task, split=sel.split, index=index, limits=sel.protocol.limits, fmt=fmt,
                            metric=metric, protocol=sel.protocol.name)
        rows.append(trainer_row(topo, task, info, target))
    return rows


def export_for_trainer(protocol: Any, out: str | Path, target: str, *, tool_format: str = "hermes",
                       metric: str | dict[str, float] = "success", train_n: int | None = None,
                       val_n: int | None = None, suites_dirs: list | tuple = ()) -> dict[str, Any]:
    """Write the train file and one validation file per test topology; returns the manifest written.
    ``train_n`` / ``val_n`` override the protocol's train / test task counts."""
    if target not in TARGETS:
        raise UserError(f"unknown trainer '{target}' (known: {', '.join(TARGETS)})")
    train = select_tasks(protocol, split="train", n=train_n, suites_dirs=suites_dirs)
    if train.tasks:  # a bad metric or a format the topology cannot be written in fails here, once
        TextEpisode(train.tasks[0], train.topology, tool_format=tool_format, metric=metric).close()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, Any] = {}
    selections = [("train.parquet", train)]
    names = [t.name for t in train.protocol.test]
    names += [s.name for s in train.protocol.ladder if s.suite is not None and s.name not in names]
    for name in names:
        sel = select_tasks(train.protocol, split="test", n=val_n, topology=name, suites_dirs=suites_dirs)
        selections.append((f"val_{name}.parquet", sel))
    fingerprints = []
    for name, sel in selections:
        write_rows(trainer_rows(sel, target, tool_format=tool_format, metric=metric), out / name)
        files[name] = {"topology": sel.topology.name, "split": sel.split, "n": len(sel.tasks), "seed": sel.seed,
                       "task_set_sha256": sel.task_set_sha256}
        fingerprints += [t.fingerprint() for t in sel.tasks] if sel.split == "train" else []
    manifest = {"protocol": train.protocol.name, "protocol_sha256": train.protocol_sha256, "for": target,
                "tool_format": tool_format, "metric": metric, "topology": train.topology.name, "split": "train",
                "n": len(train.tasks), "seed": train.seed, "task_set_sha256": train.task_set_sha256,
                "topoeval_version": __version__, "files": files, "fingerprints": sorted(fingerprints)}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest
