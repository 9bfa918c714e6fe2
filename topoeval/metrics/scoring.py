"""Per-episode scores: the suite's outcome scores, the decision-quality dimensions, and counts."""

from __future__ import annotations

from typing import Any

from topoeval.core.suite import Suite, Task, World
from topoeval.metrics.collateral import CollateralReport, collateral_scores
from topoeval.metrics.dimensions import decision_quality
from topoeval.metrics.progress import progress
from topoeval.metrics.reasons import reasons


def score_episode(suite: Suite, task: Task, record: dict[str, Any], world: World) -> dict[str, Any]:
    """Scores of a finished episode record (``record`` as written to episodes.jsonl).

    ``success`` (and ``f1`` for answer tasks) come from the suite; ``clarification``,
    ``priority``, ``risk``, ``parallelism``, ``efficiency`` and ``dq`` from
    :mod:`topoeval.metrics.dimensions` (``None`` where a dimension does not apply); ``reasons``
    (dimension -> one line, :mod:`topoeval.metrics.reasons`) says why each that applies scored so.
    """
    scores: dict[str, Any] = dict(suite.score(task, record.get("final_answer"), world))
    # the metrics read a batch call as its parts; the counts below are of the calls the model made
    metric_calls, metric_events = suite.expand_calls(record.get("calls", []), record.get("events", []))
    tools = {t.name: t for t in suite.tools}
    scores.update(decision_quality(task, {**record, "calls": metric_calls, "events": metric_events}, tools,
                                   serial_only=suite.manifest.topology.calls_per_turn == 1))
    # one line per dimension that applies: why it scored what it did (never changes a score)
    scores["reasons"] = reasons(task, metric_calls, metric_events, tools, scores, scores,
                                progress(task, metric_calls, metric_events, tools))
    # beside the suite's verdict, never folded into it (:mod:`topoeval.metrics.collateral`)
    if record.get("collateral") is not None:
        scores.update(collateral_scores(CollateralReport.model_validate(record["collateral"])))
    calls = record.get("calls", [])
    usage = record.get("usage") or {}
    scores["tool_calls"] = sum(1 for c in calls if c["status"] != "skipped")
    scores["invalid_calls"] = sum(1 for c in calls if c["status"] == "invalid")
    scores["tool_errors"] = sum(1 for c in calls if c["status"] in ("tool_error", "crash"))
    scores["turns"] = record.get("turns", 0)
    scores["prompt_tokens"] = usage.get("prompt_tokens", 0)
    scores["completion_tokens"] = usage.get("completion_tokens", 0)
    if record.get("cost") is not None:
        scores["cost"] = record["cost"]
    return scores
