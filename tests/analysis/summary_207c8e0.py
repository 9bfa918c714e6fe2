"""summary.json's cells as 207c8e0 computed them, from all records at once (frozen here, verbatim): the
reference the streaming pass of topoeval.analysis.summary must equal, number for number."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np

from topoeval.analysis.diagnostics import CellDiagnostics, TokensByOutcome
from topoeval.analysis.stats import bootstrap_ci, is_scored, mark_ties, pass_at_k, pass_hat_k
from topoeval.analysis.summary import BINARY_METRICS


def metric_stats(by_task_sample: dict[str, dict[int, float]], with_pass: bool = False) -> dict[str, Any]:
    """Statistics of one metric in one cell.

    ``by_task_sample`` maps task id -> sample index -> value (nulls already left out).
    ``mean`` is over all values; ``std`` across the k per-sample means (0 when k = 1); ``ci95``
    a bootstrap interval of the mean of per-task means; ``se`` the standard error of that mean
    over tasks (std of per-task means / sqrt(n); 0 with one task); ``n`` the tasks with a value. With
    ``with_pass`` (binary metrics such as success): ``pass@k`` and ``pass^k`` for every k up to
    the samples every task has, averaged over tasks.
    """
    values = [v for samples in by_task_sample.values() for v in samples.values()]
    if not values:
        return {"mean": None, "std": None, "ci95": None, "n": 0}
    per_sample: dict[int, list[float]] = defaultdict(list)
    for samples in by_task_sample.values():
        for s, v in samples.items():
            per_sample[s].append(v)
    sample_means = [sum(v) / len(v) for v in per_sample.values()]
    std = float(np.std(sample_means, ddof=1)) if len(sample_means) > 1 else 0.0
    per_task = [sum(s.values()) / len(s) for s in by_task_sample.values()]
    out: dict[str, Any] = {
        "mean": sum(values) / len(values),
        "std": std,
        "ci95": bootstrap_ci(per_task),
        "se": float(np.std(per_task, ddof=1) / np.sqrt(len(per_task))) if len(per_task) > 1 else 0.0,
        "n": len(by_task_sample),
    }
    if with_pass:
        k_max = min(len(s) for s in by_task_sample.values())
        counts = [(len(s), sum(1 for v in s.values() if v >= 1.0)) for s in by_task_sample.values()]
        out["pass@k"] = {str(k): float(np.mean([pass_at_k(n, c, k) for n, c in counts])) for k in range(1, k_max + 1)}
        out["pass^k"] = {str(k): float(np.mean([pass_hat_k(n, c, k) for n, c in counts])) for k in range(1, k_max + 1)}
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _trajectory(record: dict[str, Any]) -> str:
    """The episode's tool-call sequence as one comparable string."""
    calls = [(c["name"], c.get("arguments") if c.get("arguments") is not None else c.get("raw_arguments"))
             for c in record.get("calls", []) if c.get("status") != "skipped"]
    return json.dumps(calls, sort_keys=True, default=str)


def _solved(record: dict[str, Any]) -> bool:
    return (record["scores"].get("success") or 0.0) >= 1.0


def build_diagnostics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The diagnostics of one cell's episode records (those that ended in ``error`` left out)."""
    scored = [r for r in records if is_scored(r) and r.get("scores")]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        by_task[r["task_id"]].append(r)
    k = min((len(rs) for rs in by_task.values()), default=0)
    grouped: dict[str, float | None] = {"zero_signal_share": None, "all_failed_share": None, "all_solved_share": None,
                                        "pass_gap": None, "trajectory_diversity": None}
    if k >= 2:
        solved = {t: sum(_solved(r) for r in rs) for t, rs in by_task.items()}
        failed = grouped["all_failed_share"] = _mean([float(c == 0) for c in solved.values()])
        all_solved = grouped["all_solved_share"] = _mean([float(c == len(by_task[t])) for t, c in solved.items()])
        grouped["zero_signal_share"] = failed + all_solved if failed is not None and all_solved is not None else None
        grouped["pass_gap"] = _mean([pass_at_k(len(by_task[t]), c, k) - pass_at_k(len(by_task[t]), c, 1)
                                     for t, c in solved.items()])
        grouped["trajectory_diversity"] = _mean([len({_trajectory(r) for r in rs}) / len(rs)
                                                 for rs in by_task.values()])
    wins = [float(r["scores"].get("completion_tokens") or 0) for r in scored if _solved(r)]
    losses = [float(r["scores"].get("completion_tokens") or 0) for r in scored if not _solved(r)]
    return CellDiagnostics(
        samples=k,
        **grouped,
        tool_calls=_mean([float(r["scores"].get("tool_calls", 0)) for r in scored]),
        invalid_calls=_mean([float(r["scores"].get("invalid_calls", 0)) for r in scored]),
        redundant_calls=_mean([float(r["scores"].get("redundant_calls", 0)) for r in scored]),
        completion_tokens=TokensByOutcome(success=_mean(wins), failure=_mean(losses), n_success=len(wins),
                                          n_failure=len(losses)),
        questions=_mean([float(sum(1 for e in r.get("events", []) if e.get("type") == "ask")) for r in scored]),
        unanswered_questions=_mean([float(r["scores"].get("unanswered_questions", 0)) for r in scored]),
    ).model_dump()


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

