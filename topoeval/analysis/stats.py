"""Cell statistics: mean, std across samples, bootstrap CI over tasks, pass@k, pass^k, ties."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

#: Bootstrap resamples for the 95 % CI (seeded, so summaries are reproducible).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def is_scored(record: dict[str, Any]) -> bool:
    """Whether an episode counts in a cell's statistics: every one but those that ended in ``error``
    (the backend or the world failed, not the model), which are counted as ``n_errors`` instead."""
    return record.get("status") != "error"


def bootstrap_ci(per_task: list[float], confidence: float = 0.95) -> list[float] | None:
    """Percentile bootstrap CI of the mean over tasks (scipy); None for fewer than 2 tasks."""
    if len(per_task) < 2:
        return None
    if len(set(per_task)) == 1:
        return [per_task[0], per_task[0]]
    from scipy.stats import bootstrap

    res = bootstrap(
        (np.asarray(per_task, dtype=float),), np.mean, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile", random_state=np.random.default_rng(BOOTSTRAP_SEED), vectorized=True,
    )
    return [float(res.confidence_interval.low), float(res.confidence_interval.high)]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: 1 − C(n−c, k) / C(n, k) (n samples, c correct)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task (τ-bench): C(c, k) / C(n, k) — all k of k draws succeed."""
    return math.comb(c, k) / math.comb(n, k)


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


def noise(stats: dict[str, Any]) -> float:
    """How much a cell mean moves by chance — the std of the tie rule: the larger of the across-sample
    std and the standard error over tasks (a deterministic policy, or any run with one sample, has no
    sample spread, but its tasks still vary)."""
    return max(stats.get("std") or 0.0, stats.get("se") or 0.0)


#: The tie rule (DESIGN §4), the one place it is written: two means whose difference is under
#: ``TIE_SIGMAS`` × the larger noise (:func:`noise`) of the cells compared are a tie, and equal means
#: always are. ``compare`` and summary.json's ``ties``, the headline's ``flat``, the leaderboard's ``=``
#: and the ladder's shape thresholds all use it.
TIE_SIGMAS = 2.0


def tie_margin(*cells: dict[str, Any] | float) -> float:
    """The tie rule's margin for these cells (metric stats dicts, or noises already taken)."""
    return TIE_SIGMAS * max([c if isinstance(c, (int, float)) else noise(c) for c in cells] or [0.0])


def is_tie(difference: float, margin: float) -> bool:
    """Whether a difference of two means is a tie under ``margin`` (see :data:`TIE_SIGMAS`)."""
    return difference == 0 or abs(difference) < margin


def ratio_over_noise(numerator: float | None, denominator: float | None, margin: float,
                     what: str = "the denominator", ratio: str = "the ratio") -> tuple[float | None, str | None]:
    """``numerator / denominator``, or ``(None, reason)`` when it is undefined: when either is null, or
    when the denominator ties with 0 under the tie rule (``margin``, from :func:`tie_margin` of the cells
    the denominator comes from). Every transfer ratio and few-shot recovery of every report comes from
    here, so a ratio over a score that cannot be told from 0 (a random policy's 0.01) is never printed
    as a number."""
    if denominator is None:
        return None, f"{what} is null"
    if numerator is None:
        return None, "the numerator is null"
    if is_tie(denominator, margin):
        if denominator == 0:
            return None, f"{what} is 0: {ratio} is undefined"
        return None, (f"{what} {denominator:.3g} ties with 0 under the tie rule (margin {margin:.3g}): {ratio} "
                      "is undefined")
    return numerator / denominator, None


def mark_ties(cells: list[dict[str, Any]], metric: str = "success") -> None:
    """Add ``ties`` to each cell: the cells of the same topology whose ``metric`` mean ties its own
    under the tie rule (:data:`TIE_SIGMAS`). Stored as "model/baseline" labels."""
    for a in cells:
        a["ties"] = []
        sa = a["metrics"].get(metric) or {}
        for b in cells:
            sb = b["metrics"].get(metric) or {}
            if a is b or a["topology"] != b["topology"] or sa.get("mean") is None or sb.get("mean") is None:
                continue
            if is_tie(sa["mean"] - sb["mean"], tie_margin(sa, sb)):
                a["ties"].append(f"{b['model']}/{b['baseline']}")
