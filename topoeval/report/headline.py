"""The headline of a run: per model, ID against OOD success with 95 % CIs, and the collapse's shape.

One row per model, on its zero-shot baseline (the transfer the protocol measures; the first
baseline run when there is no zero-shot one). The shape is the ladder's named shape of success
(:mod:`topoeval.analysis.ladder`) when the protocol has a ladder; otherwise, per OOD topology,
``floor`` when S_id and S_ood are both 0 (the model solves nothing on either side: nothing
transferred, nothing was there to lose), ``flat`` when the gap S_id − S_ood is a tie under the
tie rule (:data:`topoeval.analysis.stats.TIE_SIGMAS`), else ``drop`` or ``rise`` of that size, with the decision-quality
dimension that falls most.
"""

from __future__ import annotations

from typing import Any

from topoeval.analysis.ladder import at_floor
from topoeval.analysis.stats import is_tie, tie_margin


def _success(cell: dict[str, Any] | None) -> dict[str, Any]:
    return ((cell or {}).get("metrics") or {}).get("success") or {}


def _point(cell: dict[str, Any] | None) -> dict[str, Any]:
    stat = _success(cell)
    return {"topology": (cell or {}).get("topology"), "mean": stat.get("mean"), "ci95": stat.get("ci95"),
            "n_errors": (cell or {}).get("n_errors") or 0, "collateral": _collateral(cell)}


def _collateral(cell: dict[str, Any] | None) -> dict[str, Any] | None:
    """The cell's collateral damage (mean, ci95, n episodes), beside its success; None where it is not defined."""
    stat = ((cell or {}).get("metrics") or {}).get("collateral") or {}
    if stat.get("mean") is None:
        return None
    return {"mean": stat["mean"], "ci95": stat.get("ci95"), "n": (cell or {}).get("collateral_episodes") or stat["n"]}


def _shape(id_cells: list[dict[str, Any]], ood: dict[str, Any], collapse: dict[str, Any] | None) -> str:
    """floor / flat / drop X / rise X for one OOD topology against the ID cells."""
    gap = (collapse or {}).get("gap", {}).get(ood["topology"])
    if gap is None:
        return "—"
    if at_floor([(collapse or {})["S_id"], ood["mean"]]):  # a gap means both are known
        return "floor"
    if is_tie(gap, tie_margin(*[_success(c) for c in id_cells], _success(ood["cell"]))):
        return "flat"
    worst = ((collapse or {}).get("dimension_collapse", {}).get(ood["topology"]) or {}).get("falls_most")
    text = f"drop {gap:.2f}" if gap > 0 else f"rise {-gap:.2f}"
    return text + (f" ({worst} falls most)" if worst and gap > 0 else "")


def build_headline(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows: model, baseline, id (mean, ci95 of the ID topology, or the mean over several), ood
    (one point per OOD topology), shape, n_errors (episodes left out, over the row's cells). Each point of one
    cell also has ``collateral`` (:func:`_collateral`: its collateral damage, or None where undefined)."""
    cells = summary.get("cells") or []
    collapse = {(e["model"], e["baseline"]): e for e in summary.get("collapse") or []}
    ladders = {(e["model"], e["baseline"]): e for e in summary.get("ladder") or []}
    rows = []
    for model in dict.fromkeys(c["model"] for c in cells):
        mine = [c for c in cells if c["model"] == model]
        baselines = list(dict.fromkeys(c["baseline"] for c in mine))
        baseline = "0-shot" if "0-shot" in baselines else baselines[0]
        mine = [c for c in mine if c["baseline"] == baseline]
        id_cells = [c for c in mine if c["role"] == "id"]
        if len(id_cells) == 1:
            id_point = _point(id_cells[0])
        else:
            means = [m for c in id_cells if (m := _success(c).get("mean")) is not None]
            id_point = {"topology": ", ".join(c["topology"] for c in id_cells), "ci95": None,
                        "mean": sum(means) / len(means) if means else None}
        entry = collapse.get((model, baseline))
        ood = [{**_point(c), "cell": c} for c in mine if c["role"] == "ood"]
        ladder = (ladders.get((model, baseline)) or {}).get("metrics", {}).get("success")
        if ladder:
            shape = ladder["shape"] + (f" at {ladder['breaking_axis']}" if ladder.get("breaking_axis")
                                       and ladder["shape"] in ("cliff", "steps") else "")
        else:
            shape = "; ".join(f"{o['topology']}: {_shape(id_cells, o, entry)}" for o in ood) or "—"
        rows.append({
            "model": model, "baseline": baseline, "id": id_point,
            "ood": [{k: v for k, v in o.items() if k != "cell"} for o in ood],
            "shape": shape, "n_errors": sum(c.get("n_errors") or 0 for c in mine),
        })
    return rows
