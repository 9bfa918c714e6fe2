"""``topoeval validate --oracle``: the oracle played once on every task a protocol evaluates, to
catch a suite author's mistakes before they are scored.

For each test topology and ladder step (its test tasks, as many as the protocol draws), one oracle
episode must:

- end without an error, with no invalid call and no tool error among the oracle's calls (a gold
  plan that names a missing tool or passes arguments the server rejects);
- succeed (``success`` 1.0);
- on a task with an expected answer, find that answer in the observations of the calls that
  produced it: every token of the answer (lower-cased, surrounding punctuation dropped; short
  words of one letter left out) appears in the text of the oracle's tool results — an oracle that
  only repeats the task's answer would pass ``success`` while its plan proves nothing. An answer
  with ``answer_contains`` (the mcp suite) is checked per contained string.

Each problem is one line naming the topology, the task and what is wrong.
"""

from __future__ import annotations

import asyncio
import string
from typing import Any

from topoeval.core.policy import SamplingParams
from topoeval.core.suite import Task
from topoeval.policies.registry import make_policy
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.runner.episode import run_episode
from topoeval.runner.reference_runs import Target, protocol_targets, target_tasks


def answer_tokens(answer: str) -> list[str]:
    """The tokens an answer's support is checked on."""
    out = []
    for raw in answer.lower().split():
        token = raw.strip(string.punctuation + "“”‘’")
        if len(token) > 1 or token.isdigit():
            out.append(token)
    return out


def unsupported(task: Task, observations: str) -> str | None:
    """The first part of the task's expected answer that no observation contains, else None."""
    if task.answer is None:
        return None
    text = observations.lower()
    parts = task.data.get("answer_contains") if isinstance(task.data, dict) else None
    candidates = [[p] for p in parts] if parts else [[task.answer, *task.answer_aliases]]
    for options in candidates:  # each part must be supported by one of its spellings
        misses = []
        for option in options:
            missing = next((t for t in answer_tokens(option) if t not in text), None)
            if missing is None:
                break
            misses.append(missing)
        else:
            return misses[0] if misses else None
    return None


def _name(task: Task) -> str:
    name = task.data.get("name") if isinstance(task.data, dict) else None
    return f"task '{name}' ({task.id})" if name else f"task {task.id}"


def episode_problems(target: Target, task: Task, record: dict[str, Any]) -> list[str]:
    """What is wrong with one oracle episode, one line each."""
    where = f"{target.name}: {_name(task)}"
    if record["status"] == "error":
        return [f"{where}: the oracle's episode failed: {'; '.join(record['errors'])}"]
    out = []
    for call in record["calls"]:
        if call["status"] in ("invalid", "tool_error", "crash"):
            what = {"invalid": "invalid", "tool_error": "a tool error", "crash": "a crash"}[call["status"]]
            out.append(f"{where}: the gold plan's call {call['name']} was {what}: {call.get('error')}")
    if record["scores"].get("success") != 1.0:
        out.append(f"{where}: the oracle does not succeed (success {record['scores'].get('success')})")
    observations = "\n".join(str(m.get("content") or "") for m in record["messages"] if m.get("role") == "tool")
    missing = unsupported(task, observations)
    if missing is not None:
        tools = ", ".join(sorted({c["name"] for c in record["calls"]})) or "no call"
        out.append(f"{where}: the expected answer {task.answer!r} is not supported by the observations of the calls "
                   f"that produced it ({tools}): {missing!r} appears in none — check the answer or the gold plan")
    return out


def oracle_problems(protocol: Any, registry: SuiteRegistry) -> list[str]:
    """Every problem of the oracle played once on each task the protocol evaluates."""
    out: list[str] = []
    policy = make_policy("oracle")
    for target in protocol_targets(protocol, registry):
        spec = next((t for t in protocol.topologies() if f"{protocol.name}/{t.name}" == target.name), None)
        n = spec.n_tasks if spec is not None and spec.n_tasks is not None else protocol.tasks.test.n
        for task in target_tasks(target, n):
            record = asyncio.run(run_episode(
                policy=policy, suite=target.suite, task=task, system_prompt=target.suite.system_prompt(target.params),
                demos=[], limits=target.limits, sampling=SamplingParams(), sample=0, shots=0, labels={}))
            out += episode_problems(target, task, record)
    return out
