"""Collateral damage in the Hub rows (topoeval/publish/tables.py): result rows carry the cell's collateral rate
and irreversible rate with the same CI and n as success; episode rows carry each episode's collateral scores
and its reading; null (no row, or null columns) where the suite defines no scope — never 0."""

from __future__ import annotations

import json

from tests.conftest import COLLATERAL_TASKS as TASKS  # the collateral_run fixture's
from topoeval.publish.tables import collateral_columns, episode_rows, result_rows
from topoeval.runner.store import read_episodes


def test_result_rows_carry_the_collateral_rates_with_the_cis_of_the_summary(collateral_run):
    rows = {(r["model"], r["topology"], r["metric"]): r for r in result_rows(collateral_run)}
    cells = {(c["model"], c["topology"]): c for c in json.loads((collateral_run / "summary.json").read_text())["cells"]}
    for model, rate, irreversible in (("oracle", 0.0, 0.0), ("oracle-collateral", 1.0, None)):
        for metric, want in (("collateral", rate), ("collateral_irreversible", irreversible)):
            row, stat = rows[(model, "travel", metric)], cells[(model, "travel")]["metrics"][metric]
            assert (row["mean"], row["ci_low"], row["ci_high"], row["n"]) == (
                stat["mean"], stat["ci95"][0], stat["ci95"][1], TASKS)
            assert want is None or row["mean"] == want
            assert row["pass_at_k"] == [stat["pass@k"]["1"]]  # a 0/1 metric, as success
        assert rows[(model, "travel", "success")]["n"] == TASKS  # beside success, which keeps its own row
    # oracle-collateral damages an entity in every travel episode; success stays the suite's verdict
    assert rows[("oracle-collateral", "travel", "collateral")]["mean"] == 1.0
    assert rows[("oracle-collateral", "wiki", "success")]["mean"] == 1.0
    # wiki defines no collateral scope: no collateral row at all, rather than a 0
    assert not [k for k in rows if k[1] == "wiki" and k[2].startswith("collateral")]


def test_episode_rows_carry_each_episodes_collateral_scores_and_reading(collateral_run):
    records = {r["episode_id"]: r for r in read_episodes(collateral_run)}
    rows = episode_rows(collateral_run)
    assert len(rows) == len(records) == 2 * 2 * TASKS
    damaged = 0
    for row in rows:
        rec = records[row["episode_id"]]
        if row["topology"] == "wiki":
            assert row["collateral"] is row["collateral_irreversible"] is row["collateral_entities"] is None
            assert row["collateral_report"] is None
            continue
        reading = rec["collateral"]
        damage = [e for e in reading["entities"] if e["kind"] == "collateral"]
        assert row["collateral"] == float(bool(damage)) == rec["scores"]["collateral"]
        assert row["collateral_irreversible"] == float(any(not e["reversible"] for e in damage))
        assert row["collateral_entities"] == float(len(damage))
        assert json.loads(row["collateral_report"]) == reading  # every entity, with the calls that wrote it
        assert row["success"] == rec["scores"]["success"]
        damaged += bool(damage)
    assert damaged == TASKS  # oracle-collateral's three travel episodes; the oracle's none


def test_an_episode_in_error_or_from_before_collateral_has_null_collateral_columns():
    reading = {"basis": "gold_state", "entities": []}
    scores = {"success": 1.0, "collateral": 1.0, "collateral_irreversible": 0.0, "collateral_entities": 2.0}
    ok = collateral_columns({"status": "done", "scores": scores, "collateral": reading})
    assert ok == {"collateral": 1.0, "collateral_irreversible": 0.0, "collateral_entities": 2.0,
                  "collateral_report": json.dumps(reading)}
    assert set(collateral_columns({"status": "error", "scores": scores, "collateral": reading}).values()) == {None}
    assert set(collateral_columns({"status": "done", "scores": {"success": 1.0}}).values()) == {None}
    assert collateral_columns({"status": "done", "scores": {"collateral": True}})["collateral"] is None  # not a score
