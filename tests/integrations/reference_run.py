"""What ``topoeval run`` gives a reference policy: the episode phase of a real run, in a temporary
folder, so adapter tests compare their rewards with the evaluation's own numbers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from topoeval.runner.run import arun_episodes

PROTOCOL = "wiki_to_travel"
#: The numbers every adapter must reproduce exactly.
COMPARED = ("success", "dq", "clarification", "priority", "risk", "parallelism", "efficiency")


def run_scores(policy: str, n: int, out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``topoeval run wiki_to_travel --model <policy> --tasks <n> --shots 0``'s scores by (topology, task id)."""
    run = asyncio.run(arun_episodes(PROTOCOL, [policy], out, tasks=n, shots=[0]))
    return {(r["topology"], r["task_id"]): r["scores"] for r in run.records}
