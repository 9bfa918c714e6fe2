"""What each stretch of training changed, task by task: the paired comparison (:mod:`topoeval.analysis.paired`)
between consecutive checkpoints of a sweep and between the base (the first point, step 0 when the sweep has it)
and each later checkpoint, per topology — flips up and down, McNemar's exact p, the verdict, and a sentence
("From step 0 to step 100: learned wiki (8 up, 0 down of 12 tasks, McNemar p = 0.0078); forgot nothing on
travel (0 up, 0 down of 12 tasks).").

The transfer matrix's trained models against their base use the same entries
(:func:`topoeval.analysis.matrix.matrix_vs_base`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from topoeval.analysis.paired import RULE, CellValues, cell_values_by_model, compare_cell, paired_entry


def compare_points(a: dict[str, CellValues], b: dict[str, CellValues], topologies: Sequence[str],
                   label_a: str, label_b: str, baseline: str) -> list[dict[str, Any]]:
    """Per topology (in ``topologies``' order) that both sides ran: the paired entry of B against A."""
    return [paired_entry(compare_cell(a[t], b[t], baseline, t, label_a, label_b))
            for t in topologies if t in a and t in b]


def sweep_flips(records: Iterable[dict[str, Any]], points: Sequence[Any], baseline: str = "0-shot",
                topologies: Sequence[str] | None = None) -> dict[str, Any]:
    """The sweep summary's ``paired`` section: ``rule``, and ``steps``, one per compared pair of checkpoints
    (``kind`` ``consecutive`` for each step against the one before, ``from_base`` for each later step against the
    first; the second point's is its consecutive one, not repeated), each with ``from_step``, ``to_step``, the
    two models, ``topologies`` (per topology: flips, McNemar's p, verdict, paired differences, ``phrase``) and its
    ``sentence``. ``points``: the sweep's points (``step`` and ``label``); ``records``: the run's episodes."""
    ordered = sorted(points, key=lambda p: p.step)
    by_model = cell_values_by_model(records, baseline)
    names = list(topologies) if topologies is not None else list(
        dict.fromkeys(t for v in by_model.values() for t in v))
    pairs = [("consecutive", a, b) for a, b in zip(ordered, ordered[1:], strict=False)]
    pairs += [("from_base", ordered[0], p) for p in ordered[2:]]
    steps = []
    for kind, a, b in pairs:
        entries = compare_points(by_model.get(a.label, {}), by_model.get(b.label, {}), names, a.label, b.label,
                                 baseline)
        start = f"step {a.step}" + (" (the base)" if kind == "from_base" else "")
        sentence = (f"From {start} to step {b.step}: " + "; ".join(e["phrase"] for e in entries) + "."
                    if entries else f"From {start} to step {b.step}: no topology scored on both sides.")
        steps.append({"kind": kind, "from_step": a.step, "to_step": b.step, "from_model": a.label,
                      "to_model": b.label, "topologies": entries, "sentence": sentence})
    return {"rule": RULE, "steps": steps}
