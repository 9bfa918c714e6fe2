"""Paired comparison of two models (or two checkpoints, or two runs) on the same cells, task by task.

Two models run on the same tasks (same seeds, same users) are *paired*: each task is one pair, and
what matters is on how many tasks they disagree and in which direction, not whether two independent
intervals overlap. Per cell (baseline x topology), over the tasks both sides scored:

- **flips** (:func:`task_flips`): the tasks A failed and B solved (``up``, 0 → 1) and those A solved and
  B failed (``down``, 1 → 0). With k samples a task's value is its pass rate (successes / scored
  samples): a task flips up when B's rate is above A's, down when below; equal rates are ``both``
  (both at 1), ``neither`` (both at 0) or ``tied`` (equal, in between). Tasks only one side scored are
  listed (``only_a``, ``only_b``) and never paired;
- **McNemar's exact test** (:func:`mcnemar_exact`): the two-sided binomial test of ``up`` against
  ``down`` at p = 0.5 (the discordant pairs; with k samples this is the sign test on the tasks whose
  rates differ);
- **paired bootstrap CIs** (:func:`paired_bootstrap_ci`) of the mean per-task difference B − A, for
  success and for dq and each decision-quality dimension (over the tasks where it applies on both
  sides), resampling tasks with the seeded bootstrap of :mod:`topoeval.analysis.stats`;
- **one verdict** (:func:`paired_verdict`, the rule :data:`PAIRED_ALPHA`): B is better when McNemar's
  p < 0.05 and more tasks flipped up than down, A is better when p < 0.05 and more flipped down, and
  otherwise a tie. ``independent_tie`` keeps what the project's unpaired tie rule
  (:data:`topoeval.analysis.stats.TIE_SIGMAS`) says of the same two means, so a reader sees where the
  paired reading differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from topoeval.analysis.stats import bootstrap_ci, is_scored, is_tie, metric_stats, tie_margin
from topoeval.metrics.dimensions import DIMENSIONS

#: The paired verdict rule, the one place it is written: B is better than A on a cell when McNemar's
#: exact two-sided p is under ``PAIRED_ALPHA`` and more tasks flipped up (0 → 1) than down; A is better
#: when p is under it and more flipped down; anything else is a tie. (0.05: the same 95 % as the
#: unpaired rule's two standard errors.)
PAIRED_ALPHA = 0.05
#: The continuous metrics a paired comparison gives a difference and CI of (besides success).
QUALITY = ("dq", *DIMENSIONS)
#: The binary metric flips and McNemar's test are taken on.
SUCCESS = "success"

Verdict = Literal["b_better", "a_better", "tie"]
#: metric -> task id -> sample index -> value (a cell's scored episodes; the shape
#: :func:`topoeval.analysis.stats.metric_stats` takes per metric)
CellValues = dict[str, dict[str, dict[int, float]]]


class TaskFlips(BaseModel):
    """How the tasks of one cell moved from A to B (task ids, sorted)."""

    up: list[str] = Field(default_factory=list,
                          description="Tasks whose success rate rose from A to B (0 → 1 with one sample).")
    down: list[str] = Field(default_factory=list,
                            description="Tasks whose success rate fell from A to B (1 → 0 with one sample).")
    both: list[str] = Field(default_factory=list, description="Tasks both sides solved every time (rate 1 on each).")
    neither: list[str] = Field(default_factory=list, description="Tasks neither side ever solved (rate 0 on each).")
    tied: list[str] = Field(default_factory=list, description=(
        "Tasks with the same success rate strictly between 0 and 1 on both sides (only with k > 1 samples)."))
    only_a: list[str] = Field(default_factory=list, description="Tasks only A has a value for: listed, never paired.")
    only_b: list[str] = Field(default_factory=list, description="Tasks only B has a value for: listed, never paired.")

    @property
    def n_pairs(self) -> int:
        """Tasks both sides have a value for."""
        return len(self.up) + len(self.down) + len(self.both) + len(self.neither) + len(self.tied)


class PairedDiff(BaseModel):
    """The paired difference B − A of one metric in one cell."""

    n: int = Field(description="Tasks with a value of this metric on both sides (the pairs).")
    mean_a: float | None = Field(description="A's mean of its per-task means over those tasks (None: no pair).")
    mean_b: float | None = Field(description="B's mean of its per-task means over those tasks (None: no pair).")
    diff: float | None = Field(description="mean_b − mean_a: the mean per-task difference B − A (None: no pair).")
    ci95: list[float] | None = Field(description="Paired bootstrap 95 % CI of ``diff`` (tasks resampled, seeded); "
                                                 "None with fewer than 2 pairs.")


class PairedCell(BaseModel):
    """A paired comparison of A and B on one cell (baseline x topology)."""

    baseline: str = Field(description="The cell's baseline (``0-shot``, ``2-shot``, ...).")
    topology: str = Field(description="The cell's topology.")
    n_pairs: int = Field(description="Tasks with a success value on both sides.")
    flips: TaskFlips = Field(description="The tasks that flipped, and those that did not, by direction.")
    n_up: int = Field(description="len(flips.up): tasks B does better on.")
    n_down: int = Field(description="len(flips.down): tasks B does worse on.")
    mcnemar_p: float = Field(description="McNemar's exact two-sided p of n_up against n_down (1.0 with no flip).")
    success: PairedDiff = Field(description="Success (per-task pass rate) difference B − A with its paired CI.")
    quality: dict[str, PairedDiff] = Field(description="dq and each decision-quality dimension: the paired difference "
                                                       "B − A over the tasks where it applies on both sides.")
    verdict: Verdict = Field(description="The paired verdict (rule: PAIRED_ALPHA): b_better, a_better or tie.")
    independent_tie: bool | None = Field(description=(
        "What the unpaired tie rule (TIE_SIGMAS x the larger noise) says of the two cells' success means over the "
        "paired tasks: true when it calls them a tie (None: no pair)."))
    sentence: str = Field(description="The verdict in words, with the counts (``b: 8 up, 0 down of 12, McNemar p = "
                                      "0.0078: b better``).")


class PairedComparison(BaseModel):
    """A paired comparison of two sides (two models, two checkpoints, two runs) over their common cells."""

    a: str = Field(description="Label of side A (the reference: flips are read from A to B).")
    b: str = Field(description="Label of side B.")
    rule: str = Field(description="The verdict rule, in words.")
    cells: list[PairedCell] = Field(description="One per (baseline, topology) both sides have, in A's order.")
    only_a: list[list[str]] = Field(default_factory=list, description="[baseline, topology] cells only A has.")
    only_b: list[list[str]] = Field(default_factory=list, description="[baseline, topology] cells only B has.")


RULE = (f"paired, per cell: B better when McNemar's exact p < {PAIRED_ALPHA} and more tasks flipped up (0 → 1) "
        f"than down; A better when p < {PAIRED_ALPHA} and more flipped down; otherwise a tie")


def _rate(samples: Mapping[int, float] | float) -> float:
    if isinstance(samples, Mapping):
        values = list(samples.values())
        return sum(v >= 1.0 for v in values) / len(values)
    return float(samples)


def task_flips(a: Mapping[str, Any], b: Mapping[str, Any]) -> TaskFlips:
    """The flips of success from A to B. ``a`` and ``b`` map task id to its success (0/1), its pass rate
    (successes / samples, in [0, 1]), or its samples (sample index -> 0/1 value, turned into that rate).
    Only tasks on both sides are paired; the others are ``only_a`` / ``only_b``. A task flips up when B's
    rate is above A's (0 → 1 with one sample), down when below."""
    flips = TaskFlips(only_a=sorted(set(a) - set(b)), only_b=sorted(set(b) - set(a)))
    for task in sorted(set(a) & set(b)):
        ra, rb = _rate(a[task]), _rate(b[task])
        if rb > ra:
            flips.up.append(task)
        elif rb < ra:
            flips.down.append(task)
        elif ra >= 1.0:
            flips.both.append(task)
        elif ra <= 0.0:
            flips.neither.append(task)
        else:
            flips.tied.append(task)
    return flips


def mcnemar_exact(up: int, down: int) -> float:
    """McNemar's exact two-sided p: the binomial test of ``up`` successes in ``up + down`` discordant pairs
    at p = 0.5 (2 x the smaller tail, capped at 1; computed exactly). 1.0 when there is no discordant pair."""
    if up < 0 or down < 0:
        raise ValueError("flip counts are not negative")
    n = up + down
    if n == 0:
        return 1.0
    term = total = 1  # C(n, 0); each next binomial coefficient from the one before, in exact integers
    for i in range(1, min(up, down) + 1):
        term = term * (n - i + 1) // i
        total += term
    return min(1.0, total / (1 << (n - 1)))  # 2 x tail / 2^n, divided once (int / int rounds correctly)


def paired_bootstrap_ci(diffs: list[float], confidence: float = 0.95) -> list[float] | None:
    """Paired bootstrap CI of the mean of per-task differences B − A: the tasks (pairs) are resampled, with
    the seeded percentile bootstrap of :func:`topoeval.analysis.stats.bootstrap_ci` (same seed, same
    resamples). None for fewer than 2 pairs."""
    return bootstrap_ci([float(d) for d in diffs], confidence)


def paired_verdict(up: int, down: int, p: float | None = None) -> Verdict:
    """The verdict of the paired rule (:data:`PAIRED_ALPHA`) for these flip counts."""
    p = mcnemar_exact(up, down) if p is None else p
    if p < PAIRED_ALPHA and up != down:
        return "b_better" if up > down else "a_better"
    return "tie"


class FlipTest(BaseModel):
    """The flips of success between two sides on one cell, McNemar's exact test of them and the verdict."""

    flips: TaskFlips = Field(description="The tasks by direction (up, down, both, neither, tied, only_a, only_b).")
    n_up: int = Field(description="len(flips.up).")
    n_down: int = Field(description="len(flips.down).")
    p: float = Field(description="McNemar's exact two-sided p of n_up against n_down (1.0 with no flip).")
    verdict: Verdict = Field(description="The paired verdict (rule: PAIRED_ALPHA): b_better, a_better or tie.")
    rule: str = Field(description="The verdict rule, in words.")


def compare_flips(a: Mapping[str, Any], b: Mapping[str, Any]) -> FlipTest:
    """:func:`task_flips` of ``a`` and ``b`` (task -> success, pass rate or samples), McNemar's p and the verdict."""
    flips = task_flips(a, b)
    up, down = len(flips.up), len(flips.down)
    p = mcnemar_exact(up, down)
    return FlipTest(flips=flips, n_up=up, n_down=down, p=p, verdict=paired_verdict(up, down, p), rule=RULE)


def _task_means(values: Mapping[str, Mapping[int, float]]) -> dict[str, float]:
    return {t: sum(s.values()) / len(s) for t, s in values.items() if s}


def paired_diff(a: Mapping[str, Mapping[int, float]], b: Mapping[str, Mapping[int, float]]) -> PairedDiff:
    """The paired difference B − A of one metric (task -> sample -> value on each side) over the tasks both have."""
    ma, mb = _task_means(a), _task_means(b)
    common = [t for t in ma if t in mb]
    if not common:
        return PairedDiff(n=0, mean_a=None, mean_b=None, diff=None, ci95=None)
    diffs = [mb[t] - ma[t] for t in common]
    mean_a, mean_b = sum(ma[t] for t in common) / len(common), sum(mb[t] for t in common) / len(common)
    return PairedDiff(n=len(common), mean_a=mean_a, mean_b=mean_b, diff=sum(diffs) / len(diffs),
                      ci95=paired_bootstrap_ci(diffs))


def verdict_sentence(verdict: Verdict, up: int, down: int, n: int, p: float, a: str = "A", b: str = "B") -> str:
    """``b vs a: 8 up, 0 down of 12 tasks, McNemar p = 0.0078: b better``."""
    word = {"b_better": f"{b} better", "a_better": f"{a} better", "tie": "tie"}[verdict]
    return f"{b} vs {a}: {up} up, {down} down of {n} tasks, McNemar p = {p:.2g}: {word}"


def compare_cell(a: CellValues, b: CellValues, baseline: str, topology: str,
                 label_a: str = "A", label_b: str = "B") -> PairedCell:
    """The paired comparison of one cell: each side's values (metric -> task -> sample -> value)."""
    sa, sb = a.get(SUCCESS, {}), b.get(SUCCESS, {})
    test = compare_flips(sa, sb)
    flips, up, down, p, verdict = test.flips, test.n_up, test.n_down, test.p, test.verdict
    common = [t for t in sa if t in sb and sa[t] and sb[t]]
    independent: bool | None = None
    if common:
        st_a, st_b = metric_stats({t: dict(sa[t]) for t in common}), metric_stats({t: dict(sb[t]) for t in common})
        independent = is_tie(st_b["mean"] - st_a["mean"], tie_margin(st_a, st_b))
    return PairedCell(
        baseline=baseline, topology=topology, n_pairs=flips.n_pairs, flips=flips, n_up=up, n_down=down,
        mcnemar_p=p, success=paired_diff(sa, sb),
        quality={m: paired_diff(a.get(m, {}), b.get(m, {})) for m in QUALITY},
        verdict=verdict, independent_tie=independent,
        sentence=verdict_sentence(verdict, up, down, flips.n_pairs, p, label_a, label_b))


def topology_phrase(cell: PairedCell) -> str:
    """What one topology did between two points, with its counts: ``learned wiki (8 up, 0 down of 12 tasks,
    McNemar p = 0.0078)``, ``forgot travel (...)``, ``forgot nothing on travel (0 up, 0 down of 12 tasks)`` (no
    task lost; a tie when some were gained) or ``travel: a tie (3 up, 2 down of 12 tasks, McNemar p = 1)``."""
    t, up, down, n, p = cell.topology, cell.n_up, cell.n_down, cell.n_pairs, cell.mcnemar_p
    if n == 0:
        return f"{t}: no task scored on both sides"
    if cell.verdict == "b_better":
        return f"learned {t} ({up} up, {down} down of {n} tasks, McNemar p = {p:.2g})"
    if cell.verdict == "a_better":
        return f"forgot {t} ({down} down, {up} up of {n} tasks, McNemar p = {p:.2g})"
    if up == down == 0:
        return f"forgot nothing on {t} (0 up, 0 down of {n} tasks)"
    if down == 0:
        return f"forgot nothing on {t} ({up} up, 0 down of {n} tasks: a tie, McNemar p = {p:.2g})"
    return f"{t}: a tie ({up} up, {down} down of {n} tasks, McNemar p = {p:.2g})"


def paired_entry(cell: PairedCell) -> dict[str, Any]:
    """One topology of a sweep step or a matrix row: the flips, McNemar's p, the verdict, the paired differences
    of success and dq, and :func:`topology_phrase`."""
    return {"topology": cell.topology, "n_pairs": cell.n_pairs, "n_up": cell.n_up, "n_down": cell.n_down,
            "up": cell.flips.up, "down": cell.flips.down, "only_a": cell.flips.only_a, "only_b": cell.flips.only_b,
            "mcnemar_p": cell.mcnemar_p, "verdict": cell.verdict, "success_diff": cell.success.diff,
            "success_ci95": cell.success.ci95, "dq_diff": cell.quality["dq"].diff,
            "dq_ci95": cell.quality["dq"].ci95, "independent_tie": cell.independent_tie,
            "phrase": topology_phrase(cell)}


def compare_sides(a: Mapping[tuple[str, str], CellValues], b: Mapping[tuple[str, str], CellValues],
                  label_a: str = "A", label_b: str = "B") -> PairedComparison:
    """The paired comparison of two sides, each (baseline, topology) -> its cell's values; cells are paired in
    A's order, and cells only one side has are listed."""
    cells = [compare_cell(a[k], b[k], k[0], k[1], label_a, label_b) for k in a if k in b]
    return PairedComparison(a=label_a, b=label_b, rule=RULE, cells=cells,
                            only_a=[list(k) for k in a if k not in b], only_b=[list(k) for k in b if k not in a])


class ValuesFold:
    """Every model's cell values, record by record (a summary's stream can feed it as it passes): model ->
    (baseline, topology) -> metric -> task -> sample -> value, for the scored episodes (status not ``error``),
    numbers only (a metric that does not apply, null, is left out). Holds a float per scored episode and
    metric, not the episodes."""

    def __init__(self, metrics: Sequence[str] = (SUCCESS, *QUALITY)) -> None:
        self.metrics = tuple(metrics)
        self.values: dict[str, dict[tuple[str, str], CellValues]] = {}

    def add(self, r: dict[str, Any]) -> None:
        if not is_scored(r):
            return
        cell = self.values.setdefault(r["model"], {}).setdefault((r["baseline"], r["topology"]), {})
        scores = r.get("scores") or {}
        for name in self.metrics:
            value = scores.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                cell.setdefault(name, {}).setdefault(r["task_id"], {})[int(r.get("sample", 0))] = float(value)


def all_cell_values(records: Iterable[dict[str, Any]]) -> dict[str, dict[tuple[str, str], CellValues]]:
    """model -> (baseline, topology) -> the cell's values (:class:`ValuesFold`), in the records' order."""
    fold = ValuesFold()
    for r in records:
        fold.add(r)
    return fold.values


def cell_values(records: Iterable[dict[str, Any]], model: str) -> dict[tuple[str, str], CellValues]:
    """One model's cells: (baseline, topology) -> the cell's values (:class:`ValuesFold`)."""
    return all_cell_values(r for r in records if r.get("model") == model).get(model, {})


def cell_values_by_model(records: Iterable[dict[str, Any]], baseline: str) -> dict[str, dict[str, CellValues]]:
    """model -> topology -> the cell's values at ``baseline`` (a sweep's checkpoints, all at one baseline)."""
    return {m: {t: v for (b, t), v in cells.items() if b == baseline}
            for m, cells in all_cell_values(records).items()}


def compare_models(records_a: Iterable[dict[str, Any]], model_a: str, records_b: Iterable[dict[str, Any]],
                   model_b: str, label_a: str | None = None, label_b: str | None = None) -> PairedComparison:
    """Model A's episodes against model B's (the same list twice for two models of one run), paired per cell."""
    return compare_sides(cell_values(records_a, model_a), cell_values(records_b, model_b),
                         label_a or model_a, label_b or model_b)
