"""How much the measured descriptors explain of a matrix's off-diagonal loss (summary.json's
``matrix.descriptor_fit``; the analysis "Paying Less Generalization Tax", arXiv 2601.18217, did by hand).

Each off-diagonal pair — a model with a train topology T and another topology U it ran on, or, in a designed
matrix, any model's base topology B and a topology generated around it — whose own score is clear of 0 (the
tie rule) gives its success loss (own − cell) and the change of each descriptor from the own topology to the
other (:mod:`topoeval.runner.descriptors`). Per descriptor: the slope of loss on that change and the share of
the loss's variance it explains alone (r²); jointly: the least-squares fit on every descriptor that varies,
its r² and its leave-one-out r² (what it predicts of a pair it was not fitted on: the honest figure when
descriptors are many and pairs few). A descriptor that does not vary over the pairs explains nothing here.
These are the run's models: what explains a 135M adapter's loss need not explain a larger model's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topoeval.analysis.stats import ratio_over_noise, tie_margin

#: the descriptors related to the loss (run.json's ``matrix.descriptors``)
DESCRIPTORS = ("observation_chars_per_turn", "tools_offered", "gold_calls_mean", "gold_calls_std", "serial_share",
               "irreversible_per_task", "prompt_tokens")
CAVEAT = ("fitted on this run's models only: what explains the loss of 135M adapters need not explain a larger "
          "model's; a fit over few pairs is a description, not a law (read loo_r2)")


def _pairs(matrix: dict[str, Any], descriptors: dict[str, dict[str, Any]]) -> list[tuple[str, float, list[float]]]:
    out: dict[tuple[str, str, str, str], tuple[float, list[float]]] = {}

    def add(row: dict[str, Any], own_topology: str, other: str) -> None:
        own, cell = row["cells"][own_topology]["success"], row["cells"][other]["success"]
        if own["mean"] is None or cell["mean"] is None:
            return
        _, why = ratio_over_noise(own["mean"], own["mean"], tie_margin(own), "own", "loss")
        a, b = descriptors.get(own_topology) or {}, descriptors.get(other) or {}
        delta = [(b[d] - a[d]) if isinstance(a.get(d), (int, float)) and isinstance(b.get(d), (int, float))
                 else float("nan") for d in DESCRIPTORS]
        if why is None:
            out[(row["model"], row["baseline"], own_topology, other)] = (own["mean"] - cell["mean"], delta)

    for row in matrix["rows"]:
        train = row.get("train_topology")
        if train:
            for t in matrix["topologies"]:
                if t != train:
                    add(row, train, t)
    for design in (matrix.get("axis_effects") or {}).get("designs") or []:
        for row in matrix["rows"]:
            if design["base"] in row["cells"]:
                for t in design["topologies"]:
                    if t != design["base"] and t in row["cells"]:
                        add(row, design["base"], t)
    return [(" → ".join(k[2:]) + f" ({k[0]})", loss, delta) for k, (loss, delta) in out.items()]


def _r2(y: np.ndarray, fitted: np.ndarray) -> float | None:
    total = float(((y - y.mean()) ** 2).sum())
    return None if total == 0 else 1.0 - float(((y - fitted) ** 2).sum()) / total


def descriptor_fit(matrix: dict[str, Any], descriptors: dict[str, dict[str, Any]] | None) -> dict[str, Any] | None:
    """The fit (see the module docstring); None without descriptors."""
    if not descriptors:
        return None
    pairs = _pairs(matrix, descriptors)
    out: dict[str, Any] = {"metric": "success", "n_pairs": len(pairs), "per_descriptor": {}, "joint": None,
                           "caveat": CAVEAT}
    if len(pairs) < 3:
        out["why"] = f"{len(pairs)} pair(s) with an own score clear of 0: too few to relate loss to descriptors"
        return out
    y = np.array([loss for _, loss, _ in pairs])
    x = np.array([delta for _, _, delta in pairs])
    varying = []
    for j, name in enumerate(DESCRIPTORS):
        col = x[:, j]
        if np.isnan(col).any() or float(col.std()) == 0.0:
            out["per_descriptor"][name] = {"slope": None, "r2": None,
                                           "why": "not measured on every pair" if np.isnan(col).any()
                                           else "the same change on every pair: explains nothing here"}
            continue
        varying.append(j)
        slope, intercept = np.polyfit(col, y, 1)
        out["per_descriptor"][name] = {"slope": float(slope), "r2": _r2(y, slope * col + intercept)}
    if varying and len(pairs) > len(varying) + 2:
        design = np.column_stack([np.ones(len(y)), x[:, varying]])
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        hat = design @ np.linalg.pinv(design)
        leverage = np.clip(np.diag(hat), 0, 1 - 1e-9)
        residual = y - design @ coef
        press = float(((residual / (1 - leverage)) ** 2).sum())
        total = float(((y - y.mean()) ** 2).sum())
        out["joint"] = {"descriptors": [DESCRIPTORS[j] for j in varying], "r2": _r2(y, design @ coef),
                        "loo_r2": None if total == 0 else 1.0 - press / total}
    elif varying:
        out["why"] = f"{len(pairs)} pairs for {len(varying)} varying descriptors: no joint fit"
    return out
