"""Per-episode scores: the suite's outcome scores plus counts every episode has."""

from __future__ import annotations

from typing import Any

from topoeval.suite import Suite, Task, World


def score_episode(suite: Suite, task: Task, record: dict[str, Any], world: World) -> dict[str, Any]:
    """Scores of a finished episode record (``record`` as written to episodes.jsonl)."""
    scores: dict[str, Any] = dict(suite.score(task, record.get("final_answer"), world))
    calls = record.get("calls", [])
    scores["tool_calls"] = sum(1 for c in calls if c["status"] != "skipped")
    scores["invalid_calls"] = sum(1 for c in calls if c["status"] == "invalid")
    scores["tool_errors"] = sum(1 for c in calls if c["status"] in ("tool_error", "crash"))
    scores["turns"] = record.get("turns", 0)
    return scores
