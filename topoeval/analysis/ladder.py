"""Ladders: score against step, and the named shape of the collapse.

A ladder is an ordered list of topologies from the train topology toward the OOD one, each step
moving one axis. For every model x baseline and every metric (success, dq, each dimension) the
curve is the cell mean per step, and its shape is named by this rule, checked in order:

- ``floor``: every step is at the floor, 0 (the model solves nothing anywhere on the ladder: there is
  no collapse to name, and ``flat`` would read as "transfers without loss");
- ``recovers``: some step regains at least 2 × std over the lowest value before it;
- ``rises``: the last step ends at least 2 × std above the first (no collapse on this metric —
  e.g. a dimension that the later topologies dilute with easier parts);
- ``flat``: the total drop (first step − last step) is below 2 × std;
- ``cliff``: one step carries at least 60 % of the total drop (its axis is named);
- ``steps``: two or more steps each carry at least 25 % of it;
- ``linear``: otherwise (a spread-out, monotone-enough decline).

A dimension that has no meaning on some steps (clarification without hidden slots, risk without
irreversible actions) is shaped over the steps where it is defined; its curve shows ``None``
elsewhere. std is the curve's noise: the largest, over its cells, of the across-sample std and the standard
error of the cell mean over tasks. Both matter — a deterministic policy has no across-sample
spread, yet every step draws its own tasks, so a step's score moves by task sampling alone.
``breaking_axis`` is the axis of the largest single drop; ``drop_by_axis`` sums the step-to-step
drops per axis (a format-shift step's axis is ``format``: the format's share of the loss).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from topoeval.analysis.collapse import QUALITY
from topoeval.analysis.stats import noise, tie_margin

CLIFF_SHARE = 0.6
STEP_SHARE = 0.25
EPS = 1e-9


def at_floor(values: Sequence[float | None]) -> bool:
    """Whether every value is at the floor (0: nothing solved, nothing scored on the dimension)."""
    present = [v for v in values if v is not None]
    return bool(present) and all(v <= EPS for v in present)


def name_shape(values: list[float], axes: list[str | None], std: float) -> dict[str, Any]:
    """The shape of one curve (``axes[i]`` is the axis moved by step i; step 0 is the start)."""
    if at_floor(values):
        return {"shape": "floor", "breaking_axis": None}
    noise = tie_margin(std)  # the tie rule's margin: 2 × the curve's noise
    drops = [values[i - 1] - values[i] for i in range(1, len(values))]
    total = values[0] - values[-1]
    breaking = None
    if drops and max(drops) > EPS:
        breaking = axes[1 + max(range(len(drops)), key=lambda i: drops[i])]
    lowest = values[0]
    for v in values[1:]:
        if v - lowest >= noise + EPS and lowest < values[0] - EPS:
            return {"shape": "recovers", "breaking_axis": breaking}
        lowest = min(lowest, v)
    if -total >= noise + EPS:
        return {"shape": "rises", "breaking_axis": None}
    if total < noise + EPS:
        return {"shape": "flat", "breaking_axis": None}
    shares = [d / total for d in drops]
    big = max(range(len(shares)), key=lambda i: shares[i])
    if shares[big] >= CLIFF_SHARE:
        return {"shape": f"cliff at {axes[1 + big]}", "breaking_axis": breaking}
    if sum(1 for s in shares if s >= STEP_SHARE) >= 2:
        return {"shape": "steps", "breaking_axis": breaking}
    return {"shape": "linear", "breaking_axis": breaking}


def drop_by_axis(values: list[float], axes: list[str | None]) -> dict[str, float]:
    """The curve's loss, step by step, summed per axis (``axes[i]`` moved by step i): with a format-shift
    step (axis ``format``) it says how much of a collapse is format and how much the topology axes."""
    out: dict[str, float] = {}
    for i in range(1, len(values)):
        axis = axes[i] or f"step {i}"
        out[axis] = round(out.get(axis, 0.0) + values[i - 1] - values[i], 6)
    return out


def build_ladders(cells: list[dict[str, Any]], steps: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    """One entry per model x baseline: the curve and shape of every metric along ``steps``.

    ``steps`` = [(topology name, axis)], the first being the ladder's start.
    """
    if len(steps) < 2:
        return []
    by_key: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for c in cells:
        by_key.setdefault((c["model"], c["baseline"]), {})[c["topology"]] = c
    out = []
    for (model, baseline), per in by_key.items():
        if not all(name in per for name, _ in steps):
            continue
        entry: dict[str, Any] = {"model": model, "baseline": baseline, "metrics": {}}
        for metric in ("success", *QUALITY):
            stats = [per[name]["metrics"].get(metric) or {} for name, _ in steps]
            defined = [i for i, s in enumerate(stats) if s.get("mean") is not None]
            if len(defined) < 2:
                continue
            curve = [{"topology": name, "axis": axis, "mean": s.get("mean"), "ci95": s.get("ci95")}
                     for (name, axis), s in zip(steps, stats, strict=True)]
            std = max(noise(stats[i]) for i in defined)
            # a dimension without meaning on some steps (no hidden slot, no trade-off...) is shaped
            # over the steps where it has one; each kept step keeps its own axis
            shape = name_shape([stats[i]["mean"] for i in defined], [steps[i][1] for i in defined], std)
            entry["metrics"][metric] = {"curve": curve, "steps_defined": len(defined), **shape,
                                        "drop_by_axis": drop_by_axis([stats[i]["mean"] for i in defined],
                                                                     [steps[i][1] for i in defined])}
        out.append(entry)
    return out
