"""Aggregating episode records into ``summary.json`` cells (one per model x baseline x topology)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from topoeval.analysis.diagnostics import build_diagnostics
from topoeval.analysis.stats import is_scored, mark_ties, metric_stats

#: 2 adds the ``collapse`` section and per-cell ``episode_ids``; nothing of schema 1 was removed.
#: 3: episodes that ended in ``error`` are left out of every statistic and of ``episode_ids``;
#: cells count them (``n_errors``, ``error_episode_ids``) and say ``incomplete`` when there are any.
#: 4: per-cell ``diagnostics`` (training-signal diagnostics, :mod:`topoeval.analysis.diagnostics`);
#: episodes score ``coverage`` and progress-aware parallelism/efficiency (docs/metrics.md); nothing removed.
#: 5: each collapse entry's ``dimension_collapse`` names the OOD topology's ``weakest`` dimension
#: (whether or not the ID topology has it), and ``nulls`` says why each null field is null.
#: 6: a ``matrix`` section (a transfer-matrix protocol's run; null otherwise, and ``collapse`` is then []);
#: transfer ratios and few-shot recoveries are null when their denominator ties with 0 (the tie rule).
SCHEMA_VERSION = 6
#: Metrics that are 0/1 per episode: their cells also get pass@k and pass^k.
BINARY_METRICS = ("success",)


def build_cells(records: list[dict[str, Any]], order: list[tuple[str, str, str]] | None = None) -> list[dict[str, Any]]:
    """Cells from episode records; ``order`` fixes the cell order (model, baseline, topology)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["model"], r["baseline"], r["topology"])].append(r)
    keys = [k for k in (order or []) if k in groups] + sorted(k for k in groups if k not in (order or []))
    cells = []
    for key in keys:
        recs = groups[key]
        scored = [r for r in recs if is_scored(r)]
        errored = [r for r in recs if not is_scored(r)]
        metrics: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
        for r in scored:
            for name, value in r["scores"].items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value is not None:
                    metrics[name][r["task_id"]][r["sample"]] = float(value)
        status: dict[str, int] = defaultdict(int)
        for r in recs:
            status[r["status"]] += 1
        cells.append(
            {
                "model": key[0],
                "baseline": key[1],
                "topology": key[2],
                "suite": recs[0]["suite"],
                "role": recs[0]["role"],
                "n_tasks": len({r["task_id"] for r in recs}),
                "n_episodes": len(recs),
                "status": dict(sorted(status.items())),
                "n_errors": len(errored),
                "incomplete": bool(errored),
                "episode_ids": sorted(r["episode_id"] for r in scored),
                "error_episode_ids": sorted(r["episode_id"] for r in errored),
                "metrics": {name: metric_stats(metrics[name], name in BINARY_METRICS) for name in sorted(metrics)},
                "diagnostics": build_diagnostics(scored),
            }
        )
    mark_ties(cells)
    return cells


def build_summary(protocol_name: str, records: list[dict[str, Any]], order=None, extra: dict | None = None,
                  base_model: str | None = None, ladder_steps: list[tuple[str, str | None]] | None = None,
                  matrix: dict[str, Any] | None = None) -> dict:
    """summary.json; ``matrix``: run.json's matrix record (a transfer-matrix run), for the ``matrix`` section."""
    from topoeval.analysis.collapse import build_collapse
    from topoeval.analysis.ladder import build_ladders
    from topoeval.analysis.matrix import build_matrix

    cells = build_cells(records, order)
    return {"schema": SCHEMA_VERSION, "protocol": protocol_name, **(extra or {}), "cells": cells,
            "matrix": build_matrix(cells, matrix),
            "collapse": build_collapse(cells, base_model), "ladder": build_ladders(cells, ladder_steps or [])}
