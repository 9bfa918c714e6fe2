"""The dataset card's leaderboard (topoeval/publish/card.py) shows collateral damage beside success: per model ×
baseline × task set, the share of episodes that changed something outside their task's scope (irreversibly, in
brackets), over the topologies whose suite defines a scope, and "—" where none does (not measured, not 0)."""

from __future__ import annotations

import re

import pytest

import topoeval
from topoeval.publish.card import leaderboard, render_card
from topoeval.publish.tables import result_rows

TASKS = 2
HEADER = ("| # | model | baseline | OOD success | ID success | OOD dq | ID dq | collateral (irreversible) | n "
          "| task set | reproduce |")


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """The result rows of wiki_to_travel with the oracle and oracle-collateral: travel defines a collateral
    scope, wiki none."""
    out = tmp_path_factory.mktemp("card-collateral") / "run"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "oracle-collateral"], out, tasks=TASKS, shots=[0])
    return result_rows(out)


def board_rows(card: str) -> dict[str, dict[str, str]]:
    """model -> {column: cell} of the card's leaderboard table."""
    head = [c.strip() for c in HEADER.strip("|").split("|")]
    out = {}
    for line in card.splitlines():
        if re.match(r"\| \d+ \|", line):
            cells = dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True))
            out[cells["model"]] = cells
    return out


def mean(rows, model: str, metric: str) -> float:
    (row,) = [r for r in rows if r["model"] == model and r["metric"] == metric]
    return row["mean"]


def test_the_leaderboard_shows_each_models_collateral_rate_beside_success(rows):
    card = render_card(rows, "me/board")
    assert HEADER in card
    board = board_rows(card)
    assert set(board) == {"oracle", "oracle-collateral"}
    damage = (mean(rows, "oracle-collateral", "collateral"), mean(rows, "oracle-collateral", "collateral_irreversible"))
    assert damage[0] == 1.0  # the reference damages an entity outside the task in every travel episode
    assert board["oracle-collateral"]["collateral (irreversible)"] == f"{damage[0]:.2f} ({damage[1]:.2f})"
    assert board["oracle"]["collateral (irreversible)"] == "0.00 (0.00)"
    for model in board:  # beside success: the success cells stay each model's own
        for column, role in (("OOD success", "ood"), ("ID success", "id")):
            (success,) = [r["mean"] for r in rows if (r["model"], r["role"], r["metric"]) == (model, role, "success")]
            assert board[model][column] == f"{success:.2f}"
    assert card.count("**Collateral (irreversible)**: the share of episodes") == 1  # said once, above the tables


def test_a_model_whose_topologies_define_no_collateral_scope_shows_a_dash_not_0(rows):
    """wiki defines no scope: its rows carry no collateral metric, and neither does the card (no 0 made up)."""
    wiki = [r for r in rows if r["topology"] == "wiki"]
    assert wiki and not [r for r in wiki if r["metric"].startswith("collateral")]
    (entry,) = [e for e in leaderboard(wiki)["wiki_to_travel"] if e["model"] == "oracle-collateral"]
    assert entry["collateral"] is None and entry["collateral_irreversible"] is None
    assert board_rows(render_card(wiki, "me/board"))["oracle-collateral"]["collateral (irreversible)"] == "—"


def test_the_rate_is_the_mean_over_the_topologies_that_define_a_scope():
    def row(topology: str, role: str, metric: str, value: float) -> dict:
        return {"protocol": "p", "model": "m", "baseline": "0-shot", "task_set_sha256": "t" * 64, "topology": topology,
                "role": role, "metric": metric, "mean": value, "std": 0.0, "se": 0.0, "n": 4, "n_errors": 0,
                "reproduce": "topoeval run", "protocol_sha256": "p" * 64}

    rows = [row("a", "id", "success", 1.0), row("b", "ood", "success", 0.5), row("c", "ood", "success", 0.5),
            row("a", "id", "collateral", 0.25), row("b", "ood", "collateral", 0.75),
            row("a", "id", "collateral_irreversible", 0.0), row("b", "ood", "collateral_irreversible", 0.5)]
    (entry,) = leaderboard(rows)["p"]  # topology c has no scope: left out of the mean, not counted as 0
    assert (entry["collateral"], entry["collateral_irreversible"]) == (0.5, 0.25)
    assert board_rows(render_card(rows, "me/board"))["m"]["collateral (irreversible)"] == "0.50 (0.25)"
