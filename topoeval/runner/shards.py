"""Shards of a run and putting them back together.

A run's planned episodes are split into ``n`` shards by a stable hash of each episode key: the
shard that owns a key depends only on the key and ``n`` (not on the order of the plan, nor on what
other shards did), so ``--shard i/n`` on any machine runs the same episodes. Shard ``i`` appends
to ``episodes.shard-i-of-n.jsonl`` in the run folder (or a folder of its own) and resumes by key
like an unsharded run; it skips keys finished in any episode file of its folder.

Every run writes ``plan.json`` (its models, cells and planned keys), so shards can be checked and
merged later without the suites at hand: :func:`combine` reads the episode files of one or more
run folders, deduplicates by key (equal results are one episode; different finished results for
one key are a conflict), refuses folders of different protocols, task sets or plans, and lists the
planned keys no file has.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from topoeval.core.errors import UserError
from topoeval.core.files import atomic_file
from topoeval.runner.merged import KeyPositions, MergedRecords, outcome
from topoeval.runner.prompts import RecordedPrompts, read_prompts
from topoeval.runner.store import (
    RUN_JSON,
    SHARD_EPISODES,
    EpisodeStore,
    episode_files,
    read_json,
    record_line,
)

PLAN = "plan.json"


class MissingEpisodes(UserError):
    """Planned episodes that no shard file has: the merge is refused (exit code 1), listing them."""

    exit_code = 1

    def __init__(self, missing: list[str], planned: int, by_shard: dict[str, int]):
        self.missing, self.planned, self.by_shard = missing, planned, by_shard
        owners = ", ".join(f"shard {label}: {n}" for label, n in by_shard.items())
        super().__init__(f"{len(missing)} of {planned} planned episodes are missing"
                         + (f" ({owners})" if owners else "")
                         + "; run the missing shards (or re-run a shard whose run was cut short), then merge again")


class Shard(BaseModel):
    """Shard ``index`` of ``count`` (1-based: ``--shard 1/3`` .. ``--shard 3/3``)."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=1, description="This shard's number, 1..count.")
    count: int = Field(ge=1, description="How many shards the run is split into.")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/n"`` -> Shard; one-line UserError for anything else."""
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not m:
            raise UserError(f"shard takes i/n, e.g. 1/4, not '{text}'")
        i, n = int(m.group(1)), int(m.group(2))
        if n < 1 or not 1 <= i <= n:
            raise UserError(f"shard {text}: shards are numbered 1..n (e.g. 1/{max(n, 1)} .. {max(n, 1)}/{max(n, 1)})")
        return cls(index=i, count=n)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def episodes_name(self) -> str:
        return f"episodes.shard-{self.index}-of-{self.count}.jsonl"

    @property
    def cache_name(self) -> str:
        """Each shard has its own response cache (SQLite is not shared across machines)."""
        return f"cache.shard-{self.index}-of-{self.count}.sqlite"

    @property
    def summary_name(self) -> str:
        return f"summary.shard-{self.index}-of-{self.count}.json"

    def owns(self, key: str) -> bool:
        return shard_of(key, self.count) == self.index


def shard_of(key: str, count: int) -> int:
    """The shard (1..count) that owns episode ``key``: sha256 of the key, so it is the same on every
    machine, Python version and run."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % count + 1


class Plan(BaseModel):
    """``plan.json``: what a run (all of its shards together) sets out to do."""

    models: list[str] = Field(description="Model names, in the order given.")
    samples: int = Field(description="Samples per task.")
    order: list[tuple[str, str, str]] = Field(description="(model, baseline, topology) cells in protocol order.")
    keys: list[str] = Field(description="Every planned episode key, in plan order.")

    @property
    def keys_sha256(self) -> str:
        return hashlib.sha256("\n".join(self.keys).encode()).hexdigest()


def write_plan(run_dir: Path, plan: Plan) -> None:
    write_plan_keys(run_dir, plan.models, plan.samples, plan.order, plan.keys)


def write_plan_keys(run_dir: Path, models: list[str], samples: int, order: list[tuple[str, str, str]],
                    keys: Iterable[str]) -> None:
    """plan.json (a :class:`Plan`) written as the keys come, atomically: a million keys are never one list."""
    with atomic_file(run_dir / PLAN) as fh:
        head = {"models": models, "samples": samples, "order": [list(c) for c in order]}
        fh.write(json.dumps(head, ensure_ascii=False)[:-1].encode() + b', "keys": [')
        for i, key in enumerate(keys):
            fh.write((", " if i else "").encode() + json.dumps(key, ensure_ascii=False).encode())
        fh.write(b"]}\n")


def read_plan(run_dir: Path) -> Plan:
    path = Path(run_dir) / PLAN
    if not path.exists():
        raise UserError(f"{run_dir}: has no {PLAN} (a run folder written by topoeval run, 0.2 or later?)")
    return Plan.model_validate(read_json(path))


class Unplanned(UserWarning):
    """Records of episodes a run never planned were left out (a merge's or a publish's one line)."""


class PlannedKeys:
    """Which episode keys a run folder planned: plan.json's, and any key of a model that an earlier run into
    the same folder named (run.json's ``models`` that plan.json lacks: each run rewrites plan.json with its
    own models). A record of any other key (another model, or a planned model's key outside the plan) is
    foreign to the run."""

    def __init__(self, plan: Plan, metas: Iterable[dict[str, Any]]):
        self.keys = set(plan.keys)
        named = {m for meta in metas for m in (meta.get("models") or []) if isinstance(m, str)}
        self.earlier = named - set(plan.models)
        #: every model the run planned, now or in an earlier run into the folder
        self.models = set(plan.models) | self.earlier
        self._cells = {tuple(c) for c in plan.order}

    def __call__(self, key: str) -> bool:
        return key in self.keys or key.split("|", 1)[0] in self.earlier

    def cell(self, model: str, baseline: str, topology: str) -> bool:
        """Whether a summary cell is one the run planned (or one of an earlier run's models)."""
        return (model, baseline, topology) in self._cells or model in self.earlier


class PromptsDiffer(UserWarning):
    """Folders of one run recorded different prompts for a topology: the first folder's were kept."""


def warn_unplanned(count: int, where: str, doing: str) -> None:
    """The one line saying how many records ``doing`` (merge, publish) left out, and why."""
    if count:
        warnings.warn(f"{where}: left {count} record(s) out of the {doing}: their keys are not in the run's plan "
                      "(plan.json) nor of a model run.json names (records of another run, or edited by hand)",
                      Unplanned, stacklevel=3)


def merge_prompts(run_dirs: list[Path]) -> RecordedPrompts | None:
    """The recorded prompts (prompts.json) of several folders of one run, topology by topology: the first
    folder's of each topology is kept; folders that disagree on one are named in one warning. None when no
    folder has them."""
    merged: dict[str, Any] = {}
    first_of: dict[str, Path] = {}
    disagree: list[str] = []
    for d in run_dirs:
        prompts = read_prompts(d)
        for name, topo in (prompts.topologies.items() if prompts is not None else ()):
            if name not in merged:
                merged[name], first_of[name] = topo, d
            elif topo != merged[name]:
                disagree.append(f"{name} ({d} against {first_of[name]})")
    if disagree:
        warnings.warn(f"the folders record different prompts for {len(disagree)} topology(ies): {disagree[0]}"
                      + (f" and {len(disagree) - 1} more" if len(disagree) > 1 else "")
                      + "; the first folder's are kept", PromptsDiffer, stacklevel=2)
    return RecordedPrompts(topologies=merged) if merged else None


def in_plan_order(records: dict[str, dict[str, Any]], keys: Iterable[str]) -> list[dict[str, Any]]:
    """Records of the planned keys in plan order, then any others in key order: one order however
    the episodes were split or finished, so summaries come out byte-identical."""
    keys = list(keys)
    planned = set(keys)
    return [records[k] for k in keys if k in records] + [records[k] for k in sorted(records) if k not in planned]


@dataclass
class Combined:
    """What :func:`combine` found in a set of run folders."""

    run_dirs: list[Path]
    meta: dict[str, Any]
    plan: Plan
    #: one record per key: planned keys in plan order, then any others (read back from the files)
    records: MergedRecords
    #: planned keys no folder has a record for, in plan order
    missing: list[str]
    #: shard counts seen in the folders' file names (to say which shard a missing key belongs to)
    shard_counts: list[int] = field(default_factory=list)
    duplicates: int = 0

    def missing_by_shard(self) -> dict[str, int]:
        """How many missing keys each shard of each seen split owns, e.g. {"2/3": 10}."""
        out: dict[str, int] = {}
        for n in self.shard_counts:
            for key in self.missing:
                label = f"{shard_of(key, n)}/{n}"
                out[label] = out.get(label, 0) + 1
        return out


def combine(run_dirs: list[Path], prepare: Callable[[], None] | None = None) -> Combined:
    """Read every episode file of ``run_dirs`` (the folders of one run's shards, or one folder that
    holds them all); raises a one-line UserError for folders of different runs or a conflicting
    duplicate. ``prepare`` runs once the folders are checked, before their episode files are read
    (an in-place merge repairs its episode file there: the records are read back from it later)."""
    if not run_dirs:
        raise UserError("merge needs at least one run folder")
    run_dirs = [Path(d) for d in run_dirs]
    metas, plans = [], []
    for d in run_dirs:
        if not d.is_dir():
            raise UserError(f"{d}: not a folder")
        metas.append(read_json(d / RUN_JSON))
        plans.append(read_plan(d))
    first, plan = metas[0], plans[0]
    for d, meta, p in zip(run_dirs[1:], metas[1:], plans[1:], strict=True):
        if meta.get("protocol_sha256") != first.get("protocol_sha256"):
            raise UserError(f"{d} and {run_dirs[0]} hold runs of different protocols (or protocol versions); "
                            "not merged")
        if meta.get("task_set_sha256") != first.get("task_set_sha256"):
            raise UserError(f"{d} and {run_dirs[0]} hold runs over different task sets (tasks?); not merged")
        if (meta.get("identity") or {}).get("settings") != (first.get("identity") or {}).get("settings"):
            raise UserError(f"{d} and {run_dirs[0]} hold runs made under different settings "
                            "(run.json identity.settings); not merged")
        if p.keys_sha256 != plan.keys_sha256:
            raise UserError(f"{d} and {run_dirs[0]} plan different episodes (models {p.models} x {p.samples} samples "
                            f"vs {plan.models} x {plan.samples}); not merged")
    if prepare is not None:
        prepare()
    files = [path for d in run_dirs for path in episode_files(d)]
    records = MergedRecords(files, KeyPositions(plan.keys), owns=PlannedKeys(plan, metas))
    warn_unplanned(records.left_out, ", ".join(map(str, run_dirs)), "merge")
    counts = sorted({int(m.group(2)) for m in (SHARD_EPISODES.match(p.name) for p in files) if m})
    return Combined(run_dirs=run_dirs, meta=first, plan=plan, records=records, missing=records.missing(),
                    shard_counts=counts, duplicates=records.duplicates)


def merge_files(files: list[Path]) -> tuple[dict[str, dict[str, Any]], int]:
    """One record per key over several episode files (:class:`~topoeval.runner.merged.MergedRecords`'
    rule), all in memory, and how many duplicates were folded: for small folders; a run's merge
    streams them instead."""
    merged = MergedRecords(files)
    return {rec["key"]: rec for rec in merged}, merged.duplicates


def folder_records(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every episode of a run folder, over episodes.jsonl and its shard files (see :func:`merge_files`)."""
    return merge_files(episode_files(Path(run_dir)))[0]


def write_episodes(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Write ``records`` as one JSONL file, atomically (a unique scratch file, fsync, replace)."""
    with atomic_file(path) as fh:
        for rec in records:
            fh.write(record_line(rec))


def append_missing(path: Path, records: Iterable[dict[str, Any]]) -> int:
    """Append to the episode file ``path`` each record whose key's latest line there is not it
    (earlier lines stay as history); returns how many were appended. The caller holds the folder
    (:func:`topoeval.runner.lock.lock_run`): a damaged tail is repaired first."""
    store = EpisodeStore(path.parent, path.name)
    new = 0
    try:
        have = store.records
        for rec in records:
            if rec["key"] not in have or outcome(have[rec["key"]]) != outcome(rec):
                store.append(rec)
                new += 1
    finally:
        store.close()
    return new
