"""The collapse section of summary.json: how much is lost out of distribution, where, and how much
few-shot demonstrations recover. One entry per model x baseline.

- ``S_id``: mean success over the ID topologies' cells; ``S_ood``: success per OOD topology;
- ``transfer_ratio`` = S_ood / S_id (null when S_id ties with 0 under the tie rule:
  :func:`topoeval.analysis.stats.ratio_over_noise`); ``gap`` = S_id − S_ood;
- ``vs_base`` (when the protocol names a ``base_model`` that was run): S_ood(model) − S_ood(base);
- ``fewshot_recovery`` (k-shot entries): (S_ood(k) − S_ood(0)) / gap(0), the share of the zero-shot
  gap that k demonstrations close (null when the zero-shot gap ties with 0 under the tie rule);
- ``dimension_collapse``: per OOD topology, ID − OOD for dq and each decision-quality dimension
  (over the tasks where it applies; null where it applies on one side only), ``falls_most``
  (the dimension with the largest positive drop; null when none falls), and ``weakest``: the
  dimension with the lowest OOD mean and that mean, whether or not the ID topology has the
  dimension (null when none applies out of distribution, or every one that does is at 1.0);
- ``nulls``: for every null field above, why it is null (``"gap.travel": "S_ood is null: ..."``),
  so a reader need not recompute it.
Every number traces back to the cells' ``episode_ids``.
"""

from __future__ import annotations

from typing import Any

from topoeval.analysis.stats import ratio_over_noise, tie_margin
from topoeval.metrics.dimensions import DIMENSIONS

QUALITY = ("dq", *DIMENSIONS)


def _mean(cell: dict[str, Any] | None, metric: str = "success") -> float | None:
    if not cell:
        return None
    stat = cell["metrics"].get(metric) or {}
    return stat.get("mean")


def _stats(cell: dict[str, Any] | None, metric: str = "success") -> dict[str, Any]:
    return ((cell or {}).get("metrics") or {}).get(metric) or {}


def _avg(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _one_side(id_mean: float | None, ood_mean: float | None, dim: str) -> str:
    """Why an ID − OOD difference of ``dim`` is null."""
    if id_mean is None and ood_mean is None:
        return f"{dim} applies on neither side"
    side = "the ID topology" if id_mean is None else "this OOD topology"
    return f"{dim} applies on one side only: no task of {side} gives it a meaning"


def build_collapse(cells: list[dict[str, Any]], base_model: str | None = None) -> list[dict[str, Any]]:
    by_key: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    roles: dict[str, str] = {}
    for c in cells:
        by_key.setdefault((c["model"], c["baseline"]), {})[c["topology"]] = c
        roles[c["topology"]] = c["role"]
    ood = [t for t, r in roles.items() if r == "ood"]
    ids = [t for t, r in roles.items() if r == "id"]
    if not ids:  # a transfer matrix: the ID side is per model (summary.json's `matrix`)
        return []
    out = []
    for (model, baseline), topo in by_key.items():
        s_id = _avg([_mean(topo.get(t)) for t in ids])
        s_ood = {t: _mean(topo.get(t)) for t in ood}
        id_margin = tie_margin(*[_stats(topo.get(t)) for t in ids])
        ratios = {t: ratio_over_noise(v, s_id, id_margin, "S_id", "the ratio S_ood / S_id") for t, v in s_ood.items()}
        entry: dict[str, Any] = {
            "model": model,
            "baseline": baseline,
            "S_id": s_id,
            "S_ood": s_ood,
            "transfer_ratio": {t: r for t, (r, _) in ratios.items()},
            "gap": {t: (s_id - v if v is not None and s_id is not None else None) for t, v in s_ood.items()},
            "dimension_collapse": {},
            "nulls": {},
        }
        for t, v in s_ood.items():
            if v is None:
                entry["nulls"][f"S_ood.{t}"] = "no scored episode on this topology (all in error, or none run)"
            if s_id is None or v is None:
                why = "S_id is null: no scored episode on the ID topology" if s_id is None else f"S_ood.{t} is null"
                entry["nulls"][f"gap.{t}"] = entry["nulls"][f"transfer_ratio.{t}"] = why
            elif ratios[t][1] is not None:
                entry["nulls"][f"transfer_ratio.{t}"] = str(ratios[t][1])
        for t in ood:
            drops: dict[str, float | None] = {}
            for dim in QUALITY:
                a = _avg([_mean(topo.get(i), dim) for i in ids])
                b = _mean(topo.get(t), dim)
                drops[dim] = a - b if a is not None and b is not None else None
            falling = {d: v for d in DIMENSIONS if (v := drops[d]) is not None and v > 0}
            worst = max(falling, key=falling.__getitem__, default=None)
            applies = {d: m for d in DIMENSIONS if (m := _mean(topo.get(t), d)) is not None}
            low = min(applies, key=applies.__getitem__, default=None)  # ties: the first in DIMENSIONS
            weakest = {"dimension": low, "mean": applies[low]} if low is not None and applies[low] < 1.0 else None
            entry["dimension_collapse"][t] = {**drops, "falls_most": worst, "weakest": weakest}
            for dim in QUALITY:
                if drops[dim] is None:
                    entry["nulls"][f"dimension_collapse.{t}.{dim}"] = _one_side(
                        _avg([_mean(topo.get(i), dim) for i in ids]), _mean(topo.get(t), dim), dim)
            if worst is None:
                entry["nulls"][f"dimension_collapse.{t}.falls_most"] = (
                    "no dimension applies on both sides" if not any(drops[d] is not None for d in DIMENSIONS)
                    else "no dimension falls (each that applies on both sides is as good or better out of "
                         "distribution)")
            if weakest is None:
                entry["nulls"][f"dimension_collapse.{t}.weakest"] = (
                    "no decision-quality dimension applies on this topology's tasks" if not applies
                    else "every dimension that applies is at 1.0")
        if base_model and base_model != model and (base_model, baseline) in by_key:
            base = by_key[(base_model, baseline)]
            entry["vs_base"] = {t: (v - b if v is not None and (b := _mean(base.get(t))) is not None else None)
                                for t, v in s_ood.items()}
        zero = by_key.get((model, "0-shot"))
        if baseline != "0-shot" and zero is not None:
            recovery: dict[str, float | None] = {}
            z_id = _avg([_mean(zero.get(t)) for t in ids])
            for t, v in s_ood.items():
                z = _mean(zero.get(t))
                gap0 = z_id - z if z_id is not None and z is not None else None
                margin = tie_margin(*[_stats(zero.get(i)) for i in ids], _stats(zero.get(t)))
                recovery[t], reason = ratio_over_noise(v - z if v is not None and z is not None else None, gap0,
                                                       margin, "the zero-shot gap")
                if recovery[t] is None:
                    entry["nulls"][f"fewshot_recovery.{t}"] = (
                        f"{reason}: there is nothing to recover" if gap0 is not None and v is not None and z is not None
                        else "a success this needs (zero-shot S_id, S_ood, or this baseline's S_ood) is null")
            entry["fewshot_recovery"] = recovery
        out.append(entry)
    return out
