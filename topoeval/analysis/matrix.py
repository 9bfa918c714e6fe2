"""The ``matrix`` section of summary.json: every model on every topology, its own topology marked.

Built from the cells of a matrix protocol's run and run.json's ``matrix`` (each topology's axes, each
model's train topology: :mod:`topoeval.runner.matrix`). Per model × baseline (a *row*):

- ``cells``: per topology, ``success`` and ``dq`` (mean, bootstrap 95 % CI over tasks, se, n; with k ≥ 2
  samples also pass@k, pass^k and the zero-signal share);
- ``train_topology`` (null for a model trained on none of them: its row has no diagonal) and ``own``:
  its score there per metric;
- ``transfer_ratio``: per metric and other topology, cell / own — *undefined* (null, with the reason in
  ``nulls``) whenever the own score ties with 0 under the one tie rule
  (:func:`topoeval.analysis.stats.ratio_over_noise`); ``loss``: own − cell.

``attribution`` (per baseline, success): the loss attributed to each topology axis, by the method of
:func:`attribute_axes` (docs/collapse-report.md states it). ``paired``: each trained model against its base
on every topology, task by task (flips, McNemar's exact p, the paired verdict: :func:`matrix_vs_base`).
``axis_effects`` (a designed matrix only): each move's loss per model with a paired bootstrap CI
(:mod:`topoeval.analysis.axis_effects`). ``descriptors``: each topology measured from its tasks
(:mod:`topoeval.runner.descriptors`), and ``descriptor_fit``: how much they explain of the off-diagonal loss
(:mod:`topoeval.analysis.descriptor_fit`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from topoeval.analysis.paired import RULE, CellValues, compare_cell, paired_entry
from topoeval.analysis.stats import ratio_over_noise, tie_margin

#: the metrics of the matrix
METRICS = ("success", "dq")


def _point(cell: dict[str, Any] | None, metric: str) -> dict[str, Any]:
    stats = ((cell or {}).get("metrics") or {}).get(metric) or {}
    point = {"mean": stats.get("mean"), "ci95": stats.get("ci95"), "se": stats.get("se"), "std": stats.get("std"),
             "n": stats.get("n", 0)}
    if metric == "success" and cell:
        diag = cell.get("diagnostics") or {}
        if (diag.get("samples") or 1) >= 2:  # k samples: can RL on this topology start from this model?
            point.update({"pass@k": stats.get("pass@k"), "pass^k": stats.get("pass^k"),
                          "zero_signal_share": diag.get("zero_signal_share")})
    return point


def build_matrix(cells: list[dict[str, Any]], record: dict[str, Any] | None,
                 values: dict[str, dict[tuple[str, str], CellValues]] | None = None,
                 base_model: str | None = None) -> dict[str, Any] | None:
    """The matrix section from the run's cells and run.json's ``matrix`` record (None: not a matrix run); with
    the run's cell ``values`` (:class:`topoeval.analysis.paired.ValuesFold`), also ``paired``: each trained model
    against its base on every topology (:func:`matrix_vs_base`)."""
    if not record:
        return None
    topologies: list[str] = list(record.get("topologies") or [])
    trains: dict[str, dict[str, Any]] = record.get("train_topologies") or {}
    by_key: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for c in cells:
        by_key.setdefault((c["model"], c["baseline"]), {})[c["topology"]] = c
        if c["topology"] not in topologies:
            topologies.append(c["topology"])
    rows = []
    for (model, baseline), per in by_key.items():
        info = trains.get(model) or {}
        train = info.get("topology")
        row: dict[str, Any] = {
            "model": model, "baseline": baseline, "train_topology": train, "train_source": info.get("source"),
            "cells": {t: {m: _point(per.get(t), m) for m in METRICS} for t in topologies},
            "own": {m: None for m in METRICS}, "transfer_ratio": {m: {} for m in METRICS},
            "loss": {m: {} for m in METRICS}, "nulls": {},
        }
        if train is None:
            row["nulls"]["train_topology"] = info.get("why") or "no train topology recorded for this model"
        for m in METRICS:
            own = row["cells"][train][m] if train in row["cells"] else None
            row["own"][m] = own["mean"] if own else None
            if train is None:
                continue
            margin = tie_margin(own or {})
            for t in topologies:
                if t == train:
                    continue
                value = row["cells"][t][m]["mean"]
                ratio, why = ratio_over_noise(value, row["own"][m], margin, f"the own-topology {m} ({train})",
                                              "the transfer ratio")
                row["transfer_ratio"][m][t] = ratio
                row["loss"][m][t] = (row["own"][m] - value
                                     if value is not None and row["own"][m] is not None else None)
                if value is None:
                    why = f"no scored episode of this model on {t} gives {m} a value"
                if why is not None:
                    row["nulls"][f"transfer_ratio.{m}.{t}"] = why
        rows.append(row)
    axes = record.get("axes") or {}
    baselines = list(dict.fromkeys(r["baseline"] for r in rows))
    out = {"topologies": topologies, "axes": axes, "rows": rows,
           "attribution": {b: attribute_axes([r for r in rows if r["baseline"] == b], axes) for b in baselines}}
    if values is not None:
        out["paired"] = matrix_vs_base(values, rows, base_model)
    if record.get("design"):  # a designed matrix: the loss of each move, per model, with its CI
        from topoeval.analysis.axis_effects import axis_effects

        out["axis_effects"] = axis_effects(record["design"], values)
    if record.get("descriptors"):  # each topology measured from its tasks, and what that explains of the loss
        from topoeval.analysis.descriptor_fit import descriptor_fit

        out["descriptors"] = record["descriptors"]
        out["descriptor_fit"] = descriptor_fit(out, record["descriptors"])
    return out


def matrix_vs_base(values: dict[str, dict[tuple[str, str], CellValues]], rows: list[dict[str, Any]],
                   base_model: str | None) -> dict[str, Any]:
    """The matrix section's ``paired``: the paired verdict of each trained model (a row with a train topology)
    against its base on every topology, per baseline. The base is the protocol's ``base_model`` when it ran,
    else the one model of the run without a train topology (when there is exactly one); ``base: null`` and a
    ``why`` otherwise. ``values``: model -> (baseline, topology) -> the cell's values."""
    untrained = list(dict.fromkeys(r["model"] for r in rows if not r.get("train_topology")))
    if base_model and base_model in values:
        base, source = base_model, "the protocol's base_model"
    elif len(untrained) == 1:
        base, source = untrained[0], "the run's one model without a train topology"
    else:
        why = (f"the protocol's base_model '{base_model}' did not run" if base_model else
               "no base: the protocol names no base_model and the run has "
               + (f"{len(untrained)} models without a train topology ({', '.join(untrained)})" if untrained
                  else "no model without a train topology"))
        return {"rule": RULE, "base": None, "why": why, "rows": []}
    out_rows = []
    for r in rows:
        if not r.get("train_topology") or r["model"] == base:
            continue
        mine, theirs = values.get(r["model"], {}), values.get(base, {})
        entries = [paired_entry(compare_cell(theirs[k], mine[k], k[0], k[1], base, r["model"]))
                   for k in mine if k[0] == r["baseline"] and k in theirs]
        out_rows.append({"model": r["model"], "baseline": r["baseline"], "train_topology": r["train_topology"],
                         "topologies": entries})
    return {"rule": RULE, "base": base, "base_source": source, "rows": out_rows}


def attribute_axes(rows: list[dict[str, Any]], axes: dict[str, dict[str, str]],
                   metric: str = "success") -> dict[str, Any]:
    """The loss attributed to each topology axis, over every off-diagonal pair of ``rows``.

    Method (docs/collapse-report.md): every (model, other topology) pair of a row whose own score is
    clear of 0 (its transfer ratio is defined) gives one equation: loss = own − cell ≈ Σ_a w_a · x_a,
    x_a = 1 when axis a differs between the model's train topology and that topology (from their
    descriptors, :func:`topoeval.runner.matrix.topology_axes`). Axes that differ in exactly the same pairs
    cannot be told apart by any fit: they are one *row* of the table (``"state + reversibility + schema"``,
    ``separable: false``, their ``axes`` listed), fitted as one column, and ``confounded`` lists them. The
    weights w ≥ 0 are the non-negative least-squares fit of those rows (``scipy.optimize.nnls``, no
    intercept): ``loss`` per row is the success lost when that axis (or that group, together) alone
    differs. Beside it, ``marginal``: the mean loss of pairs where the row differs minus the mean of pairs
    where it does not. ``under_determined`` when the rows outnumber the pairs' rank even so (the fit then
    splits the loss between rows arbitrarily, said in ``caveat``).
    """
    pairs: list[tuple[dict[str, bool], float]] = []
    for r in rows:
        train = r["train_topology"]
        if train is None or train not in axes:
            continue
        for t, loss in r["loss"][metric].items():
            if loss is None or r["transfer_ratio"][metric].get(t) is None or t not in axes:
                continue
            pairs.append(({a: axes[train].get(a) != axes[t].get(a) for a in axes[train]}, loss))
    out: dict[str, Any] = {"metric": metric, "method": "nnls", "n_pairs": len(pairs), "axes": {}, "confounded": [],
                           "rank": 0, "under_determined": False, "caveat": None}
    if not pairs:
        out["caveat"] = ("no pair to fit: no model has a train topology among the matrix's with an own score "
                         "clear of 0 (the tie rule)")
        return out
    varying = [a for a in pairs[0][0] if any(x[a] for x, _ in pairs)]
    if not varying:
        out["caveat"] = "no axis differs between any model's train topology and another topology"
        return out
    from scipy.optimize import nnls

    groups: dict[tuple[bool, ...], list[str]] = {}  # axes that differ in exactly the same pairs: one row
    for a in varying:
        groups.setdefault(tuple(x[a] for x, _ in pairs), []).append(a)
    members = list(groups.values())
    design = np.array([[1.0 if x[g[0]] else 0.0 for g in members] for x, _ in pairs])
    losses = np.array([y for _, y in pairs])
    weights, _ = nnls(design, losses)
    rank = int(np.linalg.matrix_rank(design))
    for j, group in enumerate(members):
        differs = [y for x, y in pairs if x[group[0]]]
        same = [y for x, y in pairs if not x[group[0]]]
        out["axes"][" + ".join(group)] = {
            "loss": float(weights[j]), "n_pairs": len(differs), "axes": list(group), "separable": len(group) == 1,
            "marginal": (float(np.mean(differs) - np.mean(same)) if differs and same else None),
        }
    out["confounded"] = [g for g in members if len(g) > 1]
    out["rank"] = rank
    out["under_determined"] = rank < len(members)
    if out["under_determined"]:
        counted = (f"{len(members)} rows ({len(varying)} axes)" if out["confounded"] else f"{len(varying)} axes")
        out["caveat"] = (f"under-determined: {counted} differ but the {len(pairs)} pairs have rank {rank}: the fit "
                         "splits their loss arbitrarily; read the sums of such groups, not the parts")
    return out


#: what a table says of a row that groups axes moving together in every pair
NOT_SEPARABLE = "not separable in this design"


def combine_matrices(labelled: list[tuple[str, dict[str, Any] | None]]) -> dict[str, Any] | None:
    """Several runs' matrix sections as one (``topoeval compare``): rows labelled ``model (run)``, the
    topologies in first-seen order, the axis attribution refitted over every row; a designed matrix's
    ``axis_effects`` with each design's rows of every run side by side (:func:`combine_axis_effects`); the
    measured ``descriptors`` (each topology's first-seen) with their ``descriptor_fit`` refitted over every row.
    None when no run has one."""
    present = [(label, m) for label, m in labelled if m]
    if not present:
        return None
    topologies: list[str] = []
    axes: dict[str, dict[str, str]] = {}
    rows = []
    for label, m in present:
        topologies += [t for t in m["topologies"] if t not in topologies]
        axes.update(m.get("axes") or {})
        rows += [{**r, "model": f"{r['model']} ({label})"} for r in m["rows"]]
    empty = {"mean": None, "ci95": None, "se": None, "std": None, "n": 0}
    for r in rows:  # a topology one run lacks: an empty cell, not a missing key
        r["cells"] = {t: r["cells"].get(t) or {m: dict(empty) for m in METRICS} for t in topologies}
    baselines = list(dict.fromkeys(r["baseline"] for r in rows))
    out: dict[str, Any] = {
        "topologies": topologies, "axes": axes, "rows": rows,
        "attribution": {b: attribute_axes([r for r in rows if r["baseline"] == b], axes) for b in baselines}}
    effects = combine_axis_effects([(label, m.get("axis_effects")) for label, m in present])
    if effects is not None:
        out["axis_effects"] = effects
    descriptors: dict[str, dict[str, Any]] = {}
    for _, m in present:
        for topology, measured in (m.get("descriptors") or {}).items():
            descriptors.setdefault(topology, measured)
    if descriptors:
        from topoeval.analysis.descriptor_fit import descriptor_fit

        out["descriptors"] = descriptors
        out["descriptor_fit"] = descriptor_fit(out, descriptors)
    return out


def combine_axis_effects(labelled: list[tuple[str, dict[str, Any] | None]]) -> dict[str, Any] | None:
    """Several runs' ``axis_effects`` as one: a design (the same base, plan and topologies) once, its rows those
    of every run that ran it, each model labelled ``model (run)``; the method and bootstrap of the first run
    that has any. None when no run has a design."""
    present = [(label, e) for label, e in labelled if e and e.get("designs")]
    if not present:
        return None
    designs: dict[str, dict[str, Any]] = {}
    for label, effects in present:
        for design in effects["designs"]:
            key = repr((design["base"], design.get("plan"), design["topologies"]))
            merged = designs.setdefault(key, {**design, "rows": []})
            merged["rows"] += [{**row, "model": f"{row['model']} ({label})"} for row in design["rows"]]
    return {**present[0][1], "designs": list(designs.values())}
