"""Drawing topoeval's splits from an AgentDojo domain's one fixed set of user tasks.

AgentDojo is not a generator: a domain has 16–40 hand-written user tasks. The **pool** is those
tasks, minus (by default) the ones the do-nothing agent already passes under AgentDojo's own
utility check. The pool is then **partitioned** by task id: the ids are ordered by a hash of
``domain/user_task_N`` — fixed, independent of any seed — and cut into consecutive blocks whose
sizes follow the split shares. So the splits are disjoint by task id for every seed, and a task
never changes split when a protocol changes its seeds. A split's **seed** only orders the tasks
inside the split: index ``i`` of ``(split, seed)`` is the ``i``-th task of that seeded shuffle.

A split holds a fixed number of tasks; asking for more is an error that names the size.
"""

from __future__ import annotations

import hashlib
import random

from topoeval.core.suite import SPLITS


def partition(domain: str, pool: list[str], shares: dict[str, float]) -> dict[str, list[str]]:
    """Split ``pool`` (user task ids) into disjoint blocks by the ``shares`` of each split.

    Block sizes are the shares times the pool size, rounded by largest remainder so that they sum
    to the pool size; the order is ``train, dev, test, fewshot`` over the hash-ordered ids.
    """
    order = sorted(pool, key=lambda t: hashlib.sha256(f"{domain}/{t}".encode()).hexdigest())
    total = sum(shares.get(s, 0.0) for s in SPLITS)
    exact = {s: len(order) * shares.get(s, 0.0) / total for s in SPLITS}
    sizes = {s: int(exact[s]) for s in SPLITS}
    left = len(order) - sum(sizes.values())
    for s in sorted(SPLITS, key=lambda s: (-(exact[s] - sizes[s]), SPLITS.index(s)))[:left]:
        sizes[s] += 1
    out, start = {}, 0
    for s in SPLITS:
        out[s] = order[start:start + sizes[s]]
        start += sizes[s]
    return out


def ordered(block: list[str], seed: int) -> list[str]:
    """The split's tasks in the order index ``0, 1, ...`` draws them under ``seed``."""
    out = sorted(block, key=lambda t: int(t.rsplit("_", 1)[1]))
    random.Random(seed).shuffle(out)
    return out
