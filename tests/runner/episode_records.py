"""Episode records for tests of the readers: each one valid (topoeval.runner.records), built from a key."""

from typing import Any


def key_of(task: str) -> str:
    """The key of a test episode: ``task`` itself when it is a whole key (model|baseline|topology|task|sample),
    else the key of task ``task`` of model m, 0-shot, topology t, sample 0."""
    return task if task.count("|") >= 4 else f"m|0-shot|t|{task}|0"


def episode(task: str, status: str = "done", **fields: Any) -> dict[str, Any]:
    """A valid episode record of ``task`` (see :func:`key_of`); ``fields`` added or replacing its own."""
    key = key_of(task)
    model, baseline, topology, *middle, sample = key.split("|")
    return {"key": key, "episode_id": key[-16:], "model": model, "baseline": baseline, "topology": topology,
            "suite": "echo", "role": "id", "task_id": "|".join(middle), "sample": int(sample), "status": status,
            "scores": {"success": 1.0} if status != "error" else {}, "messages": [], "calls": [], "events": [],
            **fields}
