"""Loss per axis in a designed matrix: each move's effect per model, with a paired bootstrap CI over tasks.

A designed matrix (:mod:`topoeval.protocol.design`) runs topologies generated around a base by moves, each
along one axis. Its topologies share their tasks (same seed and index), so per model, baseline and metric
the per-task scores form a table Y (tasks × topologies), and the topologies a 0/1 design matrix X (a column
per move: 1 where the topology applies it; with ``pairs`` or ``factorial``, a column per pair of moves run
together: their interaction; an intercept). The additive model

    mean score of topology t = b + Σ_move β_move x_move(t) + Σ_pair γ_pair x_a(t) x_b(t)

is fitted by least squares to the topologies' means. A move's ``loss`` is −β: the score lost when that move
alone is applied to the base (the others at the base); a pair's is −γ: what moving both loses beyond the sum
of the two (0 when they add up). Its 95 % CI is the percentile interval of the same fit over ``RESAMPLES``
bootstrap resamples of the tasks, the same resample on every topology (paired: a task's difficulty cancels).

Identifiability, stated rather than hidden: the design's ``rank``; terms whose columns are equal on every
topology run (moves always applied together) are one row (``"a + b"``, ``separable: false``: only their sum
is measured); a term that no combination of the runs isolates otherwise is ``estimable: false`` with null
loss. "Never a ratio of noise": a row whose own score (the base topology's) ties with 0 under the tie rule
has every effect null, with the reason — a model that cannot do the base task has nothing an axis could cost.
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

import numpy as np

from topoeval.analysis.paired import CellValues
from topoeval.analysis.stats import metric_stats, ratio_over_noise, tie_margin

#: Bootstrap resamples of the tasks (seeded: the same run gives the same intervals).
RESAMPLES = 2000
#: The bootstrap's seed.
SEED = 0
#: Numerical tolerance of the rank and estimability checks.
TOL = 1e-9
#: Decimals a loss, its CI and its se are rounded to (far below any task count's resolution).
DIGITS = 10
_INDEX = re.compile(r"^(?P<split>[^/]+/[^/]+)/(?P<index>\d+)-[0-9a-f]{8}$")


def task_key(task_id: str) -> str:
    """What pairs a task across the topologies of one base: its suite, split and index (a topology's parameters
    change the id's hash, not the task drawn); the id itself when it has another shape."""
    m = _INDEX.match(task_id)
    return f"{m['split']}/{m['index']}" if m else task_id


def _terms(design: dict[str, Any], topologies: list[str]) -> list[dict[str, Any]]:
    """The model's terms: each move, then each pair of moves run together (pairs and factorial plans only)."""
    moves: dict[str, str] = design["moves"]
    applied = [set(design["topologies"][t]) for t in topologies]
    terms = [{"name": m, "moves": [m], "axis": axis} for m, axis in moves.items()
             if any(m in a for a in applied)]
    if design.get("plan") in ("pairs", "factorial"):
        for a, b in combinations(moves, 2):
            if any({a, b} <= s for s in applied):
                terms.append({"name": f"{a} × {b}", "moves": [a, b], "axis": f"{moves[a]} × {moves[b]}"})
    return terms


def _identify(x: np.ndarray, names: list[str]) -> tuple[list[list[int]], int]:
    """Groups of term columns (indices into ``names``, intercept excluded) equal on every run, and the rank of
    the design with each group as one column."""
    groups: dict[tuple[float, ...], list[int]] = {}
    for j in range(len(names)):
        groups.setdefault(tuple(x[:, j + 1]), []).append(j)
    members = list(groups.values())
    reduced = np.column_stack([x[:, 0], *[x[:, g[0] + 1] for g in members]]) if members else x[:, :1]
    return members, int(np.linalg.matrix_rank(reduced, tol=TOL))


def fit_design(design: dict[str, Any], per_topology: dict[str, dict[str, float]], metric: str,
               own_stats: dict[str, Any] | None) -> dict[str, Any]:
    """One model × baseline × metric: the loss of each term with its bootstrap CI (see the module docstring).

    ``per_topology``: topology -> task key -> the task's score (mean over its samples) on that topology."""
    base = design["base"]
    ran = [t for t in design["topologies"] if per_topology.get(t)]
    shared = sorted(set.intersection(*(set(per_topology[t]) for t in ran))) if ran else []
    out: dict[str, Any] = {"own": None, "n_tasks": len(shared), "effects": {}, "undefined": None}
    if base not in ran or not shared:
        out["undefined"] = (f"the base topology {base} has no scored {metric}" if base not in ran
                            else f"no task has a {metric} on every topology of the design around {base}")
        return out
    y = np.array([[per_topology[t][k] for t in ran] for k in shared])  # tasks × topologies
    out["own"] = float(y[:, ran.index(base)].mean())
    _, why = ratio_over_noise(out["own"], out["own"], tie_margin(own_stats or {}), f"the own-topology {metric} "
                              f"({base})", "every axis effect")
    if why is not None:
        out["undefined"] = why
        return out
    terms = _terms(design, ran)
    x = np.array([[1.0] + [1.0 if set(term["moves"]) <= set(design["topologies"][t]) else 0.0 for term in terms]
                  for t in ran])
    groups, rank = _identify(x, [t["name"] for t in terms])
    reduced = np.column_stack([x[:, 0], *[x[:, g[0] + 1] for g in groups]])
    pinv = np.linalg.pinv(reduced, rcond=TOL)
    projector = pinv @ reduced  # a column is estimable when its unit vector lies in the row space
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, len(shared), size=(RESAMPLES, len(shared)))
    boot = y[picks].mean(axis=1) @ pinv.T  # resamples × coefficients: the same tasks on every topology
    point = y.mean(axis=0) @ pinv.T
    for i, group in enumerate(groups):
        col = i + 1
        name = " + ".join(terms[j]["name"] for j in group)
        unit = np.zeros(reduced.shape[1])
        unit[col] = 1.0
        estimable = bool(np.allclose(projector @ unit, unit, atol=1e-7))
        entry: dict[str, Any] = {"terms": [terms[j]["name"] for j in group],
                                 "axes": list(dict.fromkeys(terms[j]["axis"] for j in group)),
                                 "separable": len(group) == 1, "estimable": estimable,
                                 "loss": None, "ci95": None, "se": None}
        if estimable:
            losses = -boot[:, col]
            entry.update(loss=_clean(-point[col]), se=_clean(losses.std(ddof=1)) if len(shared) > 1 else None,
                         ci95=[_clean(np.percentile(losses, 2.5)), _clean(np.percentile(losses, 97.5))]
                         if len(shared) > 1 else None)
        out["effects"][name] = entry
    out["rank"] = rank
    return out


def _clean(value: Any) -> float:
    """A fitted number without the least-squares solver's rounding noise (1e-16 is 0: a CI of an oracle's
    zero loss is [0, 0], which covers 0)."""
    return round(float(value), DIGITS) + 0.0


def _per_topology(cells: dict[tuple[str, str], CellValues], baseline: str, metric: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for (b, topology), values in cells.items():
        if b != baseline:
            continue
        tasks = values.get(metric) or {}
        out[topology] = {task_key(t): sum(s.values()) / len(s) for t, s in tasks.items() if s}
    return out


def _stats(cells: dict[tuple[str, str], CellValues], baseline: str, topology: str, metric: str) -> dict[str, Any]:
    tasks = (cells.get((baseline, topology)) or {}).get(metric) or {}
    return metric_stats(tasks, metric == "success") if tasks else {}


def axis_effects(designs: list[dict[str, Any]] | None,
                 values: dict[str, dict[tuple[str, str], CellValues]] | None) -> dict[str, Any] | None:
    """summary.json's ``matrix.axis_effects``: per design (run.json's ``matrix.design``), its terms, rank and
    confounded groups, and per model × baseline and metric (success, dq, each dimension the run's values
    hold) the loss of each term with its CI; None without a design or values."""
    if not designs or values is None:
        return None
    out: dict[str, Any] = {"method": "ols", "model": "additive in the moves, plus pair interactions where run",
                           "bootstrap": {"resamples": RESAMPLES, "seed": SEED, "unit": "task, paired across "
                                         "the design's topologies"}, "designs": []}
    for design in designs:
        topologies = list(design["topologies"])
        if not topologies:
            continue
        terms = _terms(design, topologies)
        x = np.array([[1.0] + [1.0 if set(t["moves"]) <= set(design["topologies"][name]) else 0.0 for t in terms]
                      for name in topologies])
        groups, rank = _identify(x, [t["name"] for t in terms])
        entry: dict[str, Any] = {
            "base": design["base"], "plan": design.get("plan"), "topologies": topologies, "terms": terms,
            "rank": rank, "n_columns": len(groups) + 1,
            "confounded": [[terms[j]["name"] for j in g] for g in groups if len(g) > 1], "rows": [],
        }
        entry["identifiable"] = rank == entry["n_columns"]
        entry["caveat"] = _caveat(entry)
        for model, cells in values.items():
            baselines = list(dict.fromkeys(b for b, t in cells if t in design["topologies"]))
            for baseline in baselines:
                metrics = list(dict.fromkeys(m for (b, t), v in cells.items() if b == baseline for m in v))
                row: dict[str, Any] = {"model": model, "baseline": baseline, "metrics": {}}
                for metric in metrics:
                    row["metrics"][metric] = fit_design(design, _per_topology(cells, baseline, metric), metric,
                                                        _stats(cells, baseline, design["base"], metric))
                entry["rows"].append(row)
        out["designs"].append(entry)
    return out


def _caveat(entry: dict[str, Any]) -> str | None:
    parts = []
    if entry["confounded"]:
        parts.append("not separable in this design: " + "; ".join(" + ".join(g) for g in entry["confounded"])
                     + " (only each group's sum is measured)")
    if not entry["identifiable"]:
        parts.append(f"rank {entry['rank']} of {entry['n_columns']} columns: the terms marked not estimable "
                     "cannot be isolated by any combination of the topologies run")
    return "; ".join(parts) or None
