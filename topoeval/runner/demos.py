"""Few-shot demonstrations: oracle trajectories on a fewshot split, as prior conversation turns."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from topoeval.core.policy import SamplingParams
from topoeval.policies.reference import OraclePolicy
from topoeval.protocol.schema import Limits, SplitSpec
from topoeval.protocol.topology import ResolvedTopology


async def demo_messages(
    donor: ResolvedTopology, pool: SplitSpec, shots: int, seed_key: Any
) -> tuple[list[dict[str, Any]], list[str]]:
    """(messages, task ids) of ``shots`` oracle episodes drawn (seeded by ``seed_key``) from ``donor``'s fewshot split.

    The fewshot split is disjoint from the test split by construction, so a demonstration is
    never an evaluated task. A multi-turn demonstration keeps all its user instructions, each
    followed by the oracle's turns; the limits leave room for the longest (BFCL's run to ~50 turns).
    """
    from topoeval.runner.episode import run_episode

    tasks = donor.tasks("fewshot", pool.seed, pool.n)
    rng = random.Random(int.from_bytes(hashlib.sha256(json.dumps(seed_key).encode()).digest()[:8], "big"))
    chosen = rng.sample(tasks, shots)
    out: list[dict[str, Any]] = []
    for task in chosen:
        record = await run_episode(
            policy=OraclePolicy(), suite=donor.suite, task=task, system_prompt="", demos=[],
            limits=Limits(max_turns=200, max_tool_calls=400), sampling=SamplingParams(), sample=0, shots=0,
            labels={},
        )
        out += record["messages"]
    return out, [t.id for t in chosen]
