"""The shape of a transfer-over-training curve, named from its numbers (the sweep summary's ``shapes`` and
``correlations``, and the sentences the sweep report prints).

Per topology and metric:

- the **peak**: the highest mean (the earliest step of it when several reach it);
- **peaked early at step k** when the last point is below the peak by more than the tie rule
  (:func:`topoeval.analysis.stats.is_tie`: a difference under 2 × the larger noise — the std across
  samples, or the standard error over tasks — of the two points is a tie); ``ended at the peak`` when
  the last point is the peak or ties it.

Per OOD topology (and ladder step) and metric: the correlation of its curve with the ID curve over the
steps where both have a mean — Pearson's r and Spearman's ρ with n; undefined (``None``, with the
reason) with fewer than 3 points or a constant curve.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topoeval.analysis.stats import is_tie, tie_margin

METRICS = ("success", "dq")
#: the fewest steps a correlation is given for
MIN_POINTS = 3


def _noise_stats(p: dict[str, Any]) -> dict[str, Any]:
    return {"std": p.get("std") or 0.0, "se": p.get("se") or 0.0}


def curve_shape(topology: str, role: str, metric: str, series: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The shape of one curve (see the module docstring), with its sentence; None when it has no point."""
    pts = [p for p in series if p["mean"] is not None]
    if not pts:
        return None
    peak = max(pts, key=lambda p: p["mean"])  # max keeps the first: the earliest step of the highest mean
    last = pts[-1]
    margin = tie_margin(_noise_stats(peak), _noise_stats(last))
    drop = peak["mean"] - last["mean"]
    early = peak is not last and not is_tie(drop, margin)
    label = f"{topology} ({role}) {metric}"
    if all(p["mean"] == pts[0]["mean"] for p in pts):
        sentence = f"{label} stayed at {pts[0]['mean']:.2f} at every step ({len(pts)} checkpoints)."
    elif early:
        sentence = (f"{label} peaked early at step {peak['step']} ({peak['mean']:.2f}) and ended at {last['mean']:.2f} "
                    f"at step {last['step']}, below the peak by {drop:.2f}, more than the tie rule's margin "
                    f"({margin:.2f}).")
    elif peak is last:
        sentence = (f"{label} rose from {pts[0]['mean']:.2f} to its peak {peak['mean']:.2f} at the last step, "
                    f"{peak['step']}.")
    else:
        sentence = (f"{label} peaked at step {peak['step']} ({peak['mean']:.2f}); its end ({last['mean']:.2f} at step "
                    f"{last['step']}) ties the peak under the tie rule (margin {margin:.2f}).")
    return {"topology": topology, "role": role, "metric": metric, "peak_step": peak["step"], "peak": peak["mean"],
            "last_step": last["step"], "last": last["mean"], "drop": round(drop, 6), "tie_margin": round(margin, 6),
            "peaked_early": early, "sentence": sentence}


def _ranks(values: list[float]) -> np.ndarray:
    """Ranks from 1, ties given their average rank (Spearman's convention)."""
    arr = np.asarray(values, dtype=float)
    order = arr.argsort(kind="mergesort")
    ranks = np.empty(len(arr))
    ranks[order] = np.arange(1, len(arr) + 1)
    for v in np.unique(arr):
        same = arr == v
        ranks[same] = ranks[same].mean()
    return ranks


def correlation(id_series: list[dict[str, Any]], ood_series: list[dict[str, Any]]) -> dict[str, Any]:
    """Pearson and Spearman of two curves over the steps both have a mean at; ``reason`` when undefined."""
    ood = {p["step"]: p["mean"] for p in ood_series if p["mean"] is not None}
    pairs = [(p["mean"], ood[p["step"]]) for p in id_series if p["mean"] is not None and p["step"] in ood]
    n = len(pairs)
    out: dict[str, Any] = {"n": n, "pearson": None, "spearman": None, "reason": None}
    if n < MIN_POINTS:
        out["reason"] = f"fewer than {MIN_POINTS} steps with both means (n = {n})"
        return out
    xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
    constant = [what for what, v in (("the ID curve", xs), ("this curve", ys)) if len(set(v)) == 1]
    if constant:
        out["reason"] = f"{' and '.join(constant)} {'is' if len(constant) == 1 else 'are'} constant over the steps"
        return out
    out["pearson"] = round(float(np.corrcoef(xs, ys)[0, 1]), 4)
    out["spearman"] = round(float(np.corrcoef(_ranks(xs), _ranks(ys))[0, 1]), 4)
    return out


def sweep_shapes(curves: list[dict[str, Any]]) -> dict[str, Any]:
    """``shapes`` (one per curve) and ``correlations`` (each non-ID curve with the ID curve, per metric), each
    with its sentence."""
    shapes = [s for c in curves for m in METRICS if (s := curve_shape(c["topology"], c["role"], m, c[m]))]
    id_curve = next((c for c in curves if c["role"] == "id"), None)
    correlations = []
    for c in curves:
        if id_curve is None or c is id_curve:
            continue
        for m in METRICS:
            corr = correlation(id_curve[m], c[m])
            head = f"{c['topology']} ({c['role']}) {m} against {id_curve['topology']} (id) {m} over the steps"
            if corr["reason"]:
                sentence = f"{head}: correlation undefined, {corr['reason']}."
            else:
                sentence = (f"{head}: Pearson r = {corr['pearson']:.2f}, Spearman ρ = {corr['spearman']:.2f} "
                            f"(n = {corr['n']} checkpoints).")
            correlations.append({"topology": c["topology"], "role": c["role"], "metric": m,
                                 "against": id_curve["topology"], **corr, "sentence": sentence})
    return {"shapes": shapes, "correlations": correlations}
