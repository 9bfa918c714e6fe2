"""Aggregating episode records into ``summary.json`` cells (one per model x baseline x topology), in one
streaming pass: a run of any size is summarised in memory bounded by its cells' tasks, not its episodes."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from topoeval.analysis.diagnostics import DiagnosticsFold, never_calls_tools
from topoeval.analysis.stats import MetricFold, is_scored, mark_ties

#: 2 adds the ``collapse`` section and per-cell ``episode_ids``; nothing of schema 1 was removed.
#: 3: episodes that ended in ``error`` are left out of every statistic and of ``episode_ids``;
#: cells count them (``n_errors``, ``error_episode_ids``) and say ``incomplete`` when there are any.
#: 4: per-cell ``diagnostics`` (training-signal diagnostics, :mod:`topoeval.analysis.diagnostics`);
#: episodes score ``coverage`` and progress-aware parallelism/efficiency (docs/metrics.md); nothing removed.
#: 5: each collapse entry's ``dimension_collapse`` names the OOD topology's ``weakest`` dimension
#: (whether or not the ID topology has it), and ``nulls`` says why each null field is null.
#: 6: a ``matrix`` section (a transfer-matrix protocol's run; null otherwise, and ``collapse`` is then []);
#: transfer ratios and few-shot recoveries are null when their denominator ties with 0 (the tie rule).
#: (Still 6: the matrix section's ``paired``, each trained model against its base task by task, is an added key;
#: so are each cell's ``never_calls_tools`` and its diagnostics' ``no_tool_call_share``/``no_tool_call_episodes``;
#: and each cell's ``collateral_episodes`` and ``nulls``: why its collateral metrics are null, where they are.)
SCHEMA_VERSION = 6
#: Metrics that are 0/1 per episode: their cells also get pass@k and pass^k.
BINARY_METRICS = ("success", "collateral", "collateral_irreversible")
#: The per-episode collateral scores (:mod:`topoeval.metrics.collateral`), reported beside success, never in it.
COLLATERAL_METRICS = ("collateral", "collateral_irreversible", "collateral_entities")
#: Why a cell's collateral metrics are null: no scored episode of it has a collateral reading.
NO_COLLATERAL_SCOPE = ("not measured: the suite defines no collateral scope for these tasks (which entities a task "
                       "may change), so damage outside the task is unknown, not 0")
NO_SCORED_EPISODE = "no scored episode (all in error, or none run)"


class OutOfOrder(ValueError):
    """A stream of records came back to a task of a cell after another task's records: a streaming
    pass needs each cell's records task by task (plan order); a list may come in any order."""


class _Ids:
    """A cell's episode ids, 8 bytes each for the runner's 16-hex-digit ids (any other id as it is)."""

    HEX = re.compile(r"[0-9a-f]{16}")

    def __init__(self) -> None:
        self.packed = bytearray()
        self.other: list[str] = []

    def add(self, episode_id: str) -> None:
        if isinstance(episode_id, str) and self.HEX.fullmatch(episode_id):
            self.packed += bytes.fromhex(episode_id)
        else:
            self.other.append(episode_id)

    def sorted(self) -> list[str]:
        packed = self.packed
        return sorted([packed[i:i + 8].hex() for i in range(0, len(packed), 8)] + self.other)


class CellFold:
    """One cell (model x baseline x topology) folded record by record: what it keeps grows with the
    cell's tasks and samples (its open task's values, per-task means and counts, running sums), not
    with its episodes (but for 8 bytes of each episode id, which the cell lists)."""

    def __init__(self, first: dict[str, Any], ordered: bool = False):
        """``ordered``: the records are known to come in plan order (a run's own episode file read through
        its plan), so the tasks seen are counted, not kept to check the order."""
        self.suite, self.role = first["suite"], first["role"]
        self.status: dict[str, int] = defaultdict(int)
        self.tasks: set[str] | None = None if ordered else set()
        self.n_tasks = 0
        self.task: str | None = None
        self.n = 0
        self.ids, self.error_ids = _Ids(), _Ids()
        self.metrics: dict[str, MetricFold] = {}
        self.diagnostics = DiagnosticsFold()

    def add(self, r: dict[str, Any]) -> None:
        task = r["task_id"]
        if task != self.task:
            if self.tasks is not None:
                if task in self.tasks:
                    raise OutOfOrder(f"episode {r.get('key', task)}: its cell's records are not task by task (plan "
                                     "order); give a list, or the records in plan order")
                self.tasks.add(task)
            self.task = task
            self.n_tasks += 1
        self.n += 1
        self.status[r["status"]] += 1
        if not is_scored(r):
            self.error_ids.add(r["episode_id"])
            return
        self.ids.add(r["episode_id"])
        for name, value in r["scores"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value is not None:
                fold = self.metrics.get(name)
                if fold is None:
                    fold = self.metrics[name] = MetricFold(counts=name in BINARY_METRICS)
                fold.add(task, r["sample"], float(value))
        self.diagnostics.add(r)

    def cell(self, key: tuple[str, str, str]) -> dict[str, Any]:
        n_errors = self.status.get("error", 0)
        cell = {
            "model": key[0],
            "baseline": key[1],
            "topology": key[2],
            "suite": self.suite,
            "role": self.role,
            "n_tasks": self.n_tasks,
            "n_episodes": self.n,
            "status": dict(sorted(self.status.items())),
            "n_errors": n_errors,
            "incomplete": bool(n_errors),
            "episode_ids": self.ids.sorted(),
            "error_episode_ids": self.error_ids.sorted(),
            "metrics": {name: self.metrics[name].stats(name in BINARY_METRICS) for name in sorted(self.metrics)},
            "diagnostics": self.diagnostics.result(),
        }
        #: collateral is defined per episode (where the suite gives the task a scope): its metrics' n count only
        #: those; a cell where no episode defines it has no collateral metric, and ``nulls`` says why
        defined = self.metrics.get("collateral")
        cell["collateral_episodes"] = defined.all.n if defined is not None else 0
        why = NO_SCORED_EPISODE if n_errors == self.n else NO_COLLATERAL_SCOPE
        cell["nulls"] = {} if defined is not None else {f"metrics.{m}": why for m in COLLATERAL_METRICS}
        #: most episodes made no valid tool call (analysis.diagnostics.never_calls_tools): the scores measure the
        #: call format, the chat template or the token limit, not the topology
        cell["never_calls_tools"] = never_calls_tools(cell)
        return cell


def build_cells(records: Iterable[dict[str, Any]], order: list[tuple[str, str, str]] | None = None
                ) -> list[dict[str, Any]]:
    """Cells from episode records, in one pass; ``order`` fixes the cell order (model, baseline, topology).

    ``records``: a list, in any order, or any iterable read once (an episode file), whose records of a
    cell come task by task (plan order; :class:`OutOfOrder` otherwise; an iterable whose ``plan_ordered``
    is true, a run's :class:`~topoeval.runner.store.PlannedRecords`, is trusted and not checked). Either way
    the numbers are the same, to the last bit, and a stream is held one task per cell at a time
    (:class:`CellFold`)."""
    ordered = bool(getattr(records, "plan_ordered", False))
    if isinstance(records, Sequence):
        records = _task_by_task(records)
    folds: dict[tuple[str, str, str], CellFold] = {}
    for r in records:
        key = (r["model"], r["baseline"], r["topology"])
        fold = folds.get(key)
        if fold is None:
            fold = folds[key] = CellFold(r, ordered)
        fold.add(r)
    wanted = set(order or [])
    keys = [k for k in (order or []) if k in folds] + sorted(k for k in folds if k not in wanted)
    cells = [folds[key].cell(key) for key in keys]
    mark_ties(cells)
    return cells


def _task_by_task(records: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A list's records with each cell's records of one task together (each task where it first came)."""
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["model"], r["baseline"], r["topology"], r["task_id"])].append(r)
    for group in groups.values():
        yield from group


class _Watched:
    """A stream of records read once, each handed to ``see`` as it passes (its ``plan_ordered`` kept)."""

    def __init__(self, records: Iterable[dict[str, Any]], see: Any) -> None:
        self.records, self.see = records, see
        self.plan_ordered = bool(getattr(records, "plan_ordered", False))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for r in self.records:
            self.see(r)
            yield r


def build_summary(protocol_name: str, records: Iterable[dict[str, Any]], order=None, extra: dict | None = None,
                  base_model: str | None = None, ladder_steps: list[tuple[str, str | None]] | None = None,
                  matrix: dict[str, Any] | None = None) -> dict:
    """summary.json; ``matrix``: run.json's matrix record (a transfer-matrix run), for the ``matrix`` section."""
    from topoeval.analysis.collapse import build_collapse
    from topoeval.analysis.ladder import build_ladders
    from topoeval.analysis.matrix import build_matrix

    values = None
    if matrix:  # a matrix's trained models are paired against their base, task by task: their values kept
        from topoeval.analysis.paired import ValuesFold

        values = ValuesFold()  # success, dq and each dimension: a float per scored episode and metric
        if isinstance(records, Sequence):
            for r in records:
                values.add(r)
        else:
            records = _Watched(records, values.add)
    cells = build_cells(records, order)
    return {"schema": SCHEMA_VERSION, "protocol": protocol_name, **(extra or {}), "cells": cells,
            "matrix": build_matrix(cells, matrix, values.values if values else None, base_model),
            "collapse": build_collapse(cells, base_model), "ladder": build_ladders(cells, ladder_steps or [])}
