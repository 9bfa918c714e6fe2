"""Cell statistics: mean, std across samples, bootstrap CI over tasks, pass@k, pass^k, ties."""

from __future__ import annotations

import math
import sys
from array import array
from typing import Any

import numpy as np

#: Bootstrap resamples for the 95 % CI (seeded, so summaries are reproducible).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
#: at most this many resampled values in memory at once (8 MB): scipy draws the resamples in batches of
#: ``BOOTSTRAP_VALUES // tasks``, from the same random stream, so the CI is the same to the last bit and a
#: cell of 40,000 tasks no longer needs 2000 x 40,000 values (1.3 GB with the indices) at once
BOOTSTRAP_VALUES = 2**20


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
        batch=max(1, min(BOOTSTRAP_RESAMPLES, BOOTSTRAP_VALUES // len(per_task))),
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


#: ``sum()`` of floats is a compensated sum (Neumaier) from Python 3.12 on, a plain left fold before
NEUMAIER_SUM = sys.version_info >= (3, 12)


class Fold:
    """``sum()`` of floats taken one value at a time: :meth:`value` is the very float ``sum(values)``
    gives on this interpreter for the values added, in the order added (so a streaming pass gives
    the numbers a list gives, to the last bit)."""

    __slots__ = ("total", "comp", "n")

    def __init__(self) -> None:
        self.total, self.comp, self.n = 0.0, 0.0, 0

    def add(self, x: float) -> None:
        t = self.total + x
        if NEUMAIER_SUM:
            self.comp += (self.total - t) + x if abs(self.total) >= abs(x) else (x - t) + self.total
        self.total, self.n = t, self.n + 1

    def value(self) -> float:
        c = self.comp
        return self.total + c if c and math.isfinite(c) else self.total

    def mean(self) -> float | None:
        return self.value() / self.n if self.n else None


class MetricFold:
    """One metric of one cell, folded value by value in task order: every value of a task comes
    before the next task's (a cell's records in plan order). What it keeps is bounded by the cell's
    tasks and samples, not its episodes: per finished task its mean, count and successes (for the
    bootstrap and pass@k), per sample index a running sum, and the running sum of all values."""

    __slots__ = ("all", "samples", "task_means", "task_counts", "task_hits", "_task", "_open", "_hits", "_counts")

    def __init__(self, counts: bool = True) -> None:
        """``counts``: also keep each task's count and successes (what pass@k needs; 16 bytes a task)."""
        self.all = Fold()
        self.samples: dict[int, Fold] = {}
        self.task_means, self.task_counts, self.task_hits = array("d"), array("q"), array("q")
        self._counts = counts
        self._task: str | None = None
        self._open, self._hits = Fold(), 0

    def add(self, task: str, sample: int, value: float) -> None:
        if task != self._task:
            self.close_task()
            self._task = task
        self.all.add(value)
        self._open.add(value)
        self._hits += value >= 1.0
        fold = self.samples.get(sample)
        if fold is None:
            fold = self.samples[sample] = Fold()
        fold.add(value)

    def close_task(self) -> None:
        """The current task has all its values: keep its mean, count and successes only."""
        if self._task is not None and self._open.n:
            self.task_means.append(self._open.value() / self._open.n)
            if self._counts:
                self.task_counts.append(self._open.n)
                self.task_hits.append(self._hits)
        self._task, self._open, self._hits = None, Fold(), 0

    def stats(self, with_pass: bool = False) -> dict[str, Any]:
        """:func:`metric_stats` of the values added."""
        self.close_task()
        if not self.all.n:
            return {"mean": None, "std": None, "ci95": None, "n": 0}
        sample_means = [f.value() / f.n for f in self.samples.values()]
        std = float(np.std(sample_means, ddof=1)) if len(sample_means) > 1 else 0.0
        per_task = list(self.task_means)
        out: dict[str, Any] = {
            "mean": self.all.value() / self.all.n,
            "std": std,
            "ci95": bootstrap_ci(per_task),
            "se": float(np.std(per_task, ddof=1) / np.sqrt(len(per_task))) if len(per_task) > 1 else 0.0,
            "n": len(per_task),
        }
        if with_pass:
            if not self._counts:
                raise ValueError("pass@k needs a MetricFold(counts=True)")
            k_max = min(self.task_counts)
            counts = list(zip(self.task_counts, self.task_hits, strict=True))
            out["pass@k"] = {str(k): float(np.mean([pass_at_k(n, c, k) for n, c in counts]))
                             for k in range(1, k_max + 1)}
            out["pass^k"] = {str(k): float(np.mean([pass_hat_k(n, c, k) for n, c in counts]))
                             for k in range(1, k_max + 1)}
        return out


def metric_stats(by_task_sample: dict[str, dict[int, float]], with_pass: bool = False) -> dict[str, Any]:
    """Statistics of one metric in one cell.

    ``by_task_sample`` maps task id -> sample index -> value (nulls already left out).
    ``mean`` is over all values; ``std`` across the k per-sample means (0 when k = 1); ``ci95``
    a bootstrap interval of the mean of per-task means; ``se`` the standard error of that mean
    over tasks (std of per-task means / sqrt(n); 0 with one task); ``n`` the tasks with a value. With
    ``with_pass`` (binary metrics such as success): ``pass@k`` and ``pass^k`` for every k up to
    the samples every task has, averaged over tasks. (A streaming pass folds the same values with
    :class:`MetricFold`.)
    """
    fold = MetricFold(counts=with_pass)
    for task, samples in by_task_sample.items():
        for sample, value in samples.items():
            fold.add(task, sample, value)
    return fold.stats(with_pass)


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
