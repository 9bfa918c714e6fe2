"""Hand-made run folders for the paired comparison's tests: fixed records, their summary.json built by the summary
code, nothing run."""

from __future__ import annotations

import hashlib
from pathlib import Path

from topoeval.analysis.summary import build_summary
from topoeval.runner.shards import write_episodes
from topoeval.runner.store import write_json

#: model -> topology -> task id -> success per sample (None: the episode ended in error)
Outcomes = dict[str, dict[str, dict[str, list[float | None]]]]


def record(model: str, topology: str, task: str, sample: int, success: float | None,
           baseline: str = "0-shot") -> dict:
    key = f"{model}|{baseline}|{topology}|{task}|{sample}"
    scores = {} if success is None else {"success": success, "dq": 0.4 + 0.5 * success, "risk": None}
    return {"key": key, "episode_id": hashlib.sha256(key.encode()).hexdigest()[:16], "model": model,
            "baseline": baseline, "topology": topology, "suite": "wiki", "role": "id" if topology == "wiki" else "ood",
            "task_id": task, "sample": sample, "status": "error" if success is None else "done", "scores": scores,
            "messages": [], "calls": [], "events": []}


def make_run(folder: Path, outcomes: Outcomes, protocol: str = "proto", task_set: str | None = "tasks-1") -> Path:
    """A run folder holding ``outcomes`` as episodes.jsonl and their summary.json."""
    folder.mkdir(parents=True)
    records = [record(m, t, task, s, v) for m, by_topo in outcomes.items() for t, tasks in by_topo.items()
               for task, samples in tasks.items() for s, v in enumerate(samples)]
    write_episodes(folder / "episodes.jsonl", records)
    extra = {"run_id": folder.name, "protocol_sha256": "p", **({"task_set_sha256": task_set} if task_set else {})}
    write_json(folder / "summary.json", build_summary(protocol, records, extra=extra))
    return folder


def ones(n: int, solved: int, prefix: str = "t") -> dict[str, list[float | None]]:
    """``n`` tasks, one sample each, the first ``solved`` succeeding."""
    return {f"{prefix}{i:02}": [1.0 if i < solved else 0.0] for i in range(n)}
