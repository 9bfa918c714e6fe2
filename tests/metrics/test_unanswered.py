"""``unanswered_questions``: questions the simulated user mapped to nothing, counted per episode and
shown in the cell diagnostics and report.md."""

from topoeval.analysis.diagnostics import build_diagnostics
from topoeval.core.suite import Task
from topoeval.metrics.dimensions import decision_quality
from topoeval.report.markdown import render_report_md


def record(task_id: str, events: list[dict]) -> dict:
    t = Task(id=task_id, suite="s", split="test", index=0, family="f", prompt="p", hidden_slots={"budget": 300})
    scores = decision_quality(t, {"calls": [], "events": events}, {})
    return {"task_id": task_id, "sample": 0, "status": "done", "events": events, "scores": {**scores, "success": 0.0}}


def test_counted_per_episode_confirmations_excluded():
    events = [{"type": "ask", "slots": []}, {"type": "ask", "slots": ["budget"]}, {"type": "ask", "slots": []},
              {"type": "confirm", "object": "X1", "answer": "no"}]
    assert record("a", events)["scores"]["unanswered_questions"] == 2
    assert record("b", [])["scores"]["unanswered_questions"] == 0


def test_cell_diagnostics_and_report_show_them():
    recs = [record("a", [{"type": "ask", "slots": []}, {"type": "ask", "slots": ["budget"]}]),
            record("b", [{"type": "ask", "slots": ["budget"]}])]
    d = build_diagnostics(recs)
    assert d["questions"] == 1.5 and d["unanswered_questions"] == 0.5
    cell = {"model": "m", "baseline": "0-shot", "topology": "travel", "role": "ood", "suite": "travel",
            "metrics": {}, "diagnostics": d, "n_errors": 0}
    md = render_report_md({"protocol": "p", "cells": [cell]})
    assert "## Questions to the simulated user" in md
    assert "| m | 0-shot | travel | 1.50 | 0.50 | 0.33 |" in md
    # a cell that asked nothing has no row (and a run that asked nothing, no section)
    quiet = {**cell, "diagnostics": build_diagnostics([record("c", [])])}
    assert "simulated user" not in render_report_md({"protocol": "p", "cells": [quiet]})
