"""Measured descriptors of a topology, from its tasks: what the axis labels say in numbers.

Per topology (run.json's ``matrix.descriptors``; docs/transfer-matrix.md), over the run's first
:data:`SAMPLE_TASKS` test tasks:

- ``tools_offered``: tools the model is offered;
- ``gold_calls_mean`` / ``gold_calls_std``: the gold plan's length (calls per task) and its spread;
- ``serial_share``: the share of gold calls that must wait for an earlier one: that depend on an earlier
  call's result, or every call where the topology allows one call a turn (``no_batch``);
- ``irreversible_per_task``: gold calls per task to a tool that cannot be undone;
- ``prompt_tokens``: the opening prompt (system prompt, tool schemas, the task's first message), in
  characters / 4 — the same yardstick on every topology, not any one model's tokenizer;
- ``observation_chars_per_turn``: characters of tool results per assistant turn that called tools, when the
  oracle plays the task (in-process, so only for suites that need no server: a designed matrix's generated
  topologies and the built-in suites; null with ``why`` otherwise).
"""

from __future__ import annotations

import asyncio
import json
import statistics
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.policy import SamplingParams
from topoeval.protocol.schema import Limits
from topoeval.protocol.topology import ResolvedTopology

#: tasks per topology the descriptors are measured on
SAMPLE_TASKS = 12
#: suites the oracle is played on in-process for ``observation_chars_per_turn`` (no server, no data download)
IN_PROCESS = ("wiki", "travel")
#: characters per token of ``prompt_tokens``
CHARS_PER_TOKEN = 4


def _observations(topo: ResolvedTopology, tasks: list[Any], limits: Limits) -> float | None:
    from topoeval.policies.registry import make_policy
    from topoeval.runner.episode import run_episode

    policy = make_policy("oracle")
    chars, turns = 0, 0
    for task in tasks:
        record = asyncio.run(run_episode(
            policy=policy, suite=topo.suite, task=task, system_prompt=topo.system_prompt(), demos=[],
            limits=limits, sampling=SamplingParams(), sample=0, shots=0, labels={}))
        messages = record.get("messages") or []
        chars += sum(len(str(m.get("content") or "")) for m in messages if m.get("role") == "tool")
        turns += sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    return chars / turns if turns else None


def measure(topo: ResolvedTopology, seed: int, n: int, limits: Limits) -> dict[str, Any]:
    """One topology's descriptors (see the module docstring); ``why`` says what could not be measured."""
    try:
        tasks = topo.tasks("test", seed, min(n, SAMPLE_TASKS))
    except UserError as exc:
        return {"n_tasks": 0, "why": f"its tasks could not be drawn: {exc}"}
    tools = topo.suite.tools
    irreversible = {t.name for t in tools if t.effect.value == "irreversible"}
    schemas = json.dumps([{"name": t.name, "description": t.description, "parameters": t.parameters}
                          for t in tools])
    lengths = [len(t.gold) for t in tasks]
    calls = [node for t in tasks for node in t.gold]
    out: dict[str, Any] = {
        "n_tasks": len(tasks), "tools_offered": len(tools),
        "gold_calls_mean": statistics.fmean(lengths) if lengths else None,
        "gold_calls_std": statistics.pstdev(lengths) if lengths else None,
        "serial_share": (1.0 if topo.suite.manifest.topology.calls_per_turn == 1 and calls else
                         (sum(1 for node in calls if node.depends_on) / len(calls)) if calls else None),
        "irreversible_per_task": (sum(1 for node in calls if node.tool in irreversible) / len(tasks)
                                  if tasks else None),
        "prompt_tokens": (statistics.fmean(len(topo.system_prompt()) + len(schemas) + len(t.prompt) for t in tasks)
                          / CHARS_PER_TOKEN) if tasks else None,
        "observation_chars_per_turn": None,
    }
    if topo.spec.suite not in IN_PROCESS:
        out["why"] = (f"observation_chars_per_turn: the oracle is played in-process on {', '.join(IN_PROCESS)} "
                      f"only (suite {topo.spec.suite} may need a server or data)")
        return out
    with ThreadPoolExecutor(1) as pool:  # its own event loop: the run's is running
        out["observation_chars_per_turn"] = pool.submit(_observations, topo, tasks, limits).result()
    return out


def measure_all(topologies: list[ResolvedTopology], seed: int, n: int, limits: Limits) -> dict[str, dict[str, Any]]:
    """Every topology's descriptors, by name."""
    return {t.name: measure(t, seed, n, limits) for t in topologies}
