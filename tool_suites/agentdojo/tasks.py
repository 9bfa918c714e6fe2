"""What topoeval knows about each AgentDojo user task, computed once per domain from a replay.

For every user task of a domain, :func:`task_facts` replays AgentDojo's ground truth in a fresh
world (frozen clock, AgentDojo's runtime) and derives the gold DAG from the replay (:mod:`.dag`).
:func:`utility` is AgentDojo's own verdict on an episode; :func:`noop_passes` lists the tasks it
already passes when nothing is done and nothing is answered (they leave the default pool), and
:func:`needs_text` says whether a task's check reads the answer text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from topoeval.core.suite import GoldCall, ToolError

from . import dag
from .bridge import agentdojo_modules, load_domain
from .overlay import load_annotations
from .world import AgentDojoWorld


@dataclass(frozen=True)
class TaskFacts:
    """One user task as topoeval sees it."""

    user_task: str
    prompt: str
    difficulty: str
    #: AgentDojo's GROUND_TRUTH_OUTPUT: the answer text the oracle gives
    output: str
    plan: tuple[GoldCall, ...]
    gold: tuple[GoldCall, ...]


def utility(domain: str, user_task: str, answer: str, world: AgentDojoWorld) -> bool:
    """AgentDojo's own verdict on an episode: its task suite's utility check (``utility_from_traces``
    when the task defines one, else ``utility``) over the answer, the environment before and after,
    and the call trace. A check that raises on a state it did not expect is a failure."""
    d = load_domain(domain)
    ad = agentdojo_modules()
    try:
        return bool(d.suite._check_user_task_utility(
            d.tasks[user_task], [ad.text_block(answer)], world.pre_env, world.env, world.trace))
    except Exception:
        return False


def replay(domain: str, user_task: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[AgentDojoWorld, list[Any]]:
    """A fresh world after ``calls``, and each call's raw result (AgentDojo's runtime, frozen clock)."""
    world = AgentDojoWorld(load_domain(domain), user_task, load_annotations(domain))
    results = []
    for name, args in calls:
        try:
            results.append(world.execute(name, args))
        except ToolError as exc:
            raise RuntimeError(f"{domain}/{user_task}: ground-truth call {name}({args}) failed: {exc}") from None
    return world, results


@lru_cache(maxsize=None)
def task_facts(domain: str) -> dict[str, TaskFacts]:
    """Facts of every user task of ``domain`` (AgentDojo's order), computed once per process."""
    d = load_domain(domain)
    ad = agentdojo_modules()
    annotations = load_annotations(domain)
    out: dict[str, TaskFacts] = {}
    for user_task, task in d.tasks.items():
        pre = d.fresh_environment(user_task)
        calls = [(c.function, json.loads(json.dumps(dict(c.args)))) for c in task.ground_truth(pre)]
        _, results = replay(domain, user_task, calls)
        observations = [ad.tool_result_to_str(r) for r in results]
        plan, gold = dag.derive(task.PROMPT, calls, observations, [dag.leaves(r) for r in results], annotations,
                                annotations.dependencies.get(user_task))
        out[user_task] = TaskFacts(user_task=user_task, prompt=task.PROMPT, difficulty=task.DIFFICULTY.name.lower(),
                                   output=task.GROUND_TRUTH_OUTPUT, plan=tuple(plan), gold=tuple(gold))
    return out


def oracle_world(domain: str, user_task: str) -> AgentDojoWorld:
    """A world after the task's plan (the deduplicated ground truth) has run."""
    plan = task_facts(domain)[user_task].plan
    return replay(domain, user_task, [(n.tool, n.arguments) for n in plan])[0]


@lru_cache(maxsize=None)
def noop_passes(domain: str) -> frozenset[str]:
    """The user tasks AgentDojo's check passes for an agent that does nothing and answers nothing."""
    d = load_domain(domain)
    annotations = load_annotations(domain)
    return frozenset(t for t in d.tasks if utility(domain, t, "", AgentDojoWorld(d, t, annotations)))


@lru_cache(maxsize=None)
def needs_text(domain: str, user_task: str) -> bool:
    """Whether the task's check reads the answer: the plan's world with an empty answer fails it."""
    return not utility(domain, user_task, "", oracle_world(domain, user_task))
