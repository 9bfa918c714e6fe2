"""A cell's collateral damage (issue 57): its rate with a bootstrap CI over the episodes that define it, beside
success and never in it; a cell where no episode defines it says why instead of reading 0."""

from __future__ import annotations

from typing import Any

import pytest

from topoeval.analysis.stats import bootstrap_ci
from topoeval.analysis.summary import NO_COLLATERAL_SCOPE, NO_SCORED_EPISODE, build_cells


def rec(task: int, success: float, collateral: tuple[float, float, float] | None, topology: str = "travel",
        sample: int = 0, status: str = "done") -> dict[str, Any]:
    """An episode record with the scores the runner writes (collateral's three, or none where undefined)."""
    scores: dict[str, Any] = {"success": success}
    if collateral is not None:
        scores.update(zip(("collateral", "collateral_irreversible", "collateral_entities"), collateral, strict=True))
    return {"model": "m", "baseline": "0-shot", "topology": topology, "suite": topology, "role": "ood",
            "task_id": f"{topology}/test/{task}", "sample": sample, "status": status,
            "episode_id": f"{task:08x}{sample:08x}", "scores": scores if status != "error" else {},
            "collateral": None}


def test_a_cell_carries_the_collateral_rate_with_its_ci_over_the_episodes_that_define_it():
    # 4 tasks: damage on tasks 0 and 1 (task 1 irreversibly, 3 entities), none on 2; task 3 has no scope
    records = [rec(0, 1.0, (1.0, 0.0, 1.0)), rec(1, 1.0, (1.0, 1.0, 3.0)), rec(2, 0.0, (0.0, 0.0, 0.0)),
               rec(3, 1.0, None)]
    (cell,) = build_cells(records)
    rate = cell["metrics"]["collateral"]
    assert rate["mean"] == pytest.approx(2 / 3) and rate["n"] == 3  # task 3 is not in it, neither as 0 nor as 1
    assert rate["ci95"] == bootstrap_ci([1.0, 1.0, 0.0])
    assert cell["metrics"]["collateral_irreversible"]["mean"] == pytest.approx(1 / 3)
    assert cell["metrics"]["collateral_entities"]["mean"] == pytest.approx(4 / 3)
    assert rate["pass@k"] == {"1": pytest.approx(2 / 3)}  # a binary metric, as success
    assert cell["collateral_episodes"] == 3 and cell["nulls"] == {}
    # success is the suite's own verdict over all 4 tasks: collateral changes nothing of it
    assert cell["metrics"]["success"]["mean"] == 0.75 and cell["metrics"]["success"]["n"] == 4


def test_a_cell_whose_suite_defines_no_scope_says_so_instead_of_reading_0():
    (cell,) = build_cells([rec(0, 1.0, None, topology="wiki"), rec(1, 0.0, None, topology="wiki")])
    assert not {"collateral", "collateral_irreversible", "collateral_entities"} & set(cell["metrics"])
    assert cell["collateral_episodes"] == 0
    assert cell["nulls"] == {f"metrics.{m}": NO_COLLATERAL_SCOPE
                             for m in ("collateral", "collateral_irreversible", "collateral_entities")}


def test_a_cell_whose_episodes_all_ended_in_error_says_that_instead():
    (cell,) = build_cells([rec(0, 1.0, (1.0, 1.0, 1.0), status="error")])
    assert cell["collateral_episodes"] == 0 and set(cell["nulls"].values()) == {NO_SCORED_EPISODE}
    assert "collateral" not in cell["metrics"]


def test_an_episode_in_error_is_left_out_of_the_collateral_rate_as_of_success():
    (cell,) = build_cells([rec(0, 1.0, (0.0, 0.0, 0.0)), rec(1, 1.0, (1.0, 1.0, 1.0), status="error")])
    assert cell["metrics"]["collateral"]["mean"] == 0.0 and cell["collateral_episodes"] == 1
