"""The headline's shape per OOD topology, by its stated rule, on hand-built cells."""

from topoeval.analysis.collapse import build_collapse
from topoeval.report.headline import build_headline


def cell(model: str, topology: str, role: str, mean: float, se: float = 0.0) -> dict:
    return {"model": model, "baseline": "0-shot", "topology": topology, "role": role, "n_errors": 0,
            "metrics": {"success": {"mean": mean, "std": 0.0, "se": se, "ci95": [mean, mean], "n": 12}}}


def shapes(*pairs: tuple[str, float, float]) -> dict[str, str]:
    cells = [c for model, s_id, s_ood in pairs for c in (cell(model, "wiki", "id", s_id), cell(model, "travel", "ood", s_ood))]
    summary = {"cells": cells, "collapse": build_collapse(cells)}
    return {row["model"]: row["shape"] for row in build_headline(summary)}


def test_floor_when_nothing_is_solved_on_either_side():
    got = shapes(("base", 0.0, 0.0), ("same", 0.5, 0.5), ("lost", 0.8, 0.0), ("only-ood", 0.0, 0.25))
    assert got["base"] == "travel: floor"  # not "flat": there was nothing to lose
    assert got["same"] == "travel: flat"
    assert got["lost"].startswith("travel: drop 0.80")
    assert got["only-ood"] == "travel: rise 0.25"  # zero on one side only is not the floor
