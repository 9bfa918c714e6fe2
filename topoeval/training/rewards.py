"""Scoring a finished trajectory with the evaluation's own metrics (a training reward).

::

    r = topoeval.reward(task, trajectory)                          # success in {0, 1}
    r = topoeval.reward(task, trajectory, metric="dq")             # decision quality in [0, 1]
    r = topoeval.reward(task, trajectory, metric={"success": 0.7, "dq": 0.3})
    scores = topoeval.reward(task, trajectory, metric="all")       # every metric, as a dict

``task`` is a :class:`~topoeval.core.suite.Task`, its JSON dict, or a row of ``topoeval export``
(whose ``info`` carries the task and its topology). ``trajectory`` is the conversation in OpenAI
format; its assistant messages are replayed, in order, against a fresh world of the task — tool
results written in the trajectory are ignored and recomputed, so a reward cannot be faked by
editing observations, and it equals the score the evaluation would give the same messages.
"""

from __future__ import annotations

import json
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.suite import Task
from topoeval.protocol.schema import Limits


def combine(scores: dict[str, Any], metric: str | dict[str, float]) -> float:
    """One number from an episode's scores: a metric's value, or a weighted sum (missing/None = 0)."""
    weights = {metric: 1.0} if isinstance(metric, str) else metric
    numeric = [k for k, v in scores.items() if v is None or isinstance(v, (int, float))]
    unknown = [m for m in weights if m not in numeric]
    if unknown:
        raise UserError(f"unknown reward metric(s) {unknown} (known: {', '.join(sorted(numeric))})")
    return float(sum(w * float(scores.get(m) or 0.0) for m, w in weights.items()))


def _task_and_topology(task: Any) -> tuple[Task, dict[str, Any] | None]:
    if isinstance(task, Task):
        return task, None
    if isinstance(task, dict) and "info" in task:  # an export row
        info = json.loads(task["info"]) if isinstance(task["info"], str) else task["info"]
        return Task.model_validate(info["topoeval_task"]), info.get("topology")
    if isinstance(task, dict):
        return Task.model_validate(task), None
    raise TypeError(f"task must be a Task, its dict, or an export row, not {type(task).__name__}")


def reward(task: Any, trajectory: list[dict[str, Any]], *, metric: str | dict[str, float] = "success",
           topology: Any = None, suites_dirs: list | tuple = ()) -> float | dict[str, Any]:
    """Score ``trajectory`` on ``task`` (see the module docstring). ``topology`` overrides the
    topology recorded in an export row (needed for a transformed topology given a bare Task)."""
    from topoeval.protocol.topology import topology_from
    from topoeval.runner.episode import EpisodeState
    from topoeval.training.actions import as_assistant_message

    task_obj, recorded = _task_and_topology(task)
    resolved = topology_from(topology or recorded or task_obj.suite, suites_dirs=suites_dirs)
    replies = [as_assistant_message(m) for m in trajectory if m.get("role") == "assistant"]
    state = EpisodeState(resolved.suite, task_obj, resolved.system_prompt(), [],
                         Limits(max_turns=max(1, len(replies)), max_tool_calls=10_000))
    try:
        for reply in replies:
            if state.done:
                break
            state.step(reply)
        scores = state.record()["scores"]
    finally:
        state.close()
    return scores if metric == "all" else combine(scores, metric)
