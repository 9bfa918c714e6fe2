"""One rollout of one policy on one task: the agent loop."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from topoeval.errors import UserError
from topoeval.messages import ToolCall
from topoeval.policies.base import EpisodeContext, Policy, SamplingParams
from topoeval.protocol import Limits
from topoeval.runner.tool_exec import CallRecord, execute_call, observation_text
from topoeval.scoring import score_episode
from topoeval.state import state_diff
from topoeval.suite import Suite, Task


def episode_key(model: str, baseline: str, topology: str, task_id: str, sample: int) -> str:
    """Identity of an episode within a run (what resume skips on)."""
    return f"{model}|{baseline}|{topology}|{task_id}|{sample}"


def episode_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


async def run_episode(
    *,
    policy: Policy,
    suite: Suite,
    task: Task,
    system_prompt: str,
    demos: list[dict[str, Any]],
    limits: Limits,
    sampling: SamplingParams,
    sample: int,
    shots: int,
    labels: dict[str, Any],
) -> dict[str, Any]:
    """Roll out ``policy`` on ``task``; returns the episode record (never raises for model faults)."""
    started = time.perf_counter()
    world = suite.make_world(task)
    state_before = world.snapshot()
    tool_specs = {t.name: t for t in suite.tools}
    tools = [t.openai() for t in suite.tools]
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}, *demos]
    messages.append({"role": "user", "content": task.prompt})
    prefix = len(messages)
    ctx = EpisodeContext(task=task, suite=suite, sample=sample, shots=shots)
    calls: list[CallRecord] = []
    errors: list[str] = []
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    cost: float | None = None
    policy_s = 0.0
    final_answer: str | None = None
    status = "limit:max_turns"
    turns = 0

    for turn in range(limits.max_turns):
        try:
            reply = await policy.act(messages, tools, sampling, ctx)
        except UserError:  # a set-up problem (missing extra, server that cannot start): end the run
            raise
        except Exception as exc:  # backend failure after its own retries: record, do not drop
            errors.append(f"policy: {type(exc).__name__}: {exc}")
            status = "error"
            break
        turns += 1
        policy_s += reply.latency_s
        usage["prompt_tokens"] += reply.usage.prompt_tokens
        usage["completion_tokens"] += reply.usage.completion_tokens
        if reply.cost is not None:
            cost = (cost or 0.0) + reply.cost
        reply.tool_calls = _unique_ids(reply.tool_calls, turn)
        messages.append(reply.openai())
        if not reply.tool_calls:
            final_answer = reply.content or ""
            status = "done"
            break
        per_turn = suite.manifest.topology.calls_per_turn
        for i, call in enumerate(reply.tool_calls):
            if per_turn is not None and i >= per_turn:
                rec = CallRecord(
                    turn=turn, id=call.id, name=call.name, raw_arguments=call.arguments, status="skipped",
                    error=f"this topology takes {'one tool call' if per_turn == 1 else f'{per_turn} tool calls'} "
                    "per turn; make this call in a later turn",
                )
            elif len(calls) >= limits.max_tool_calls:
                rec = CallRecord(
                    turn=turn, id=call.id, name=call.name, raw_arguments=call.arguments,
                    status="skipped", error=f"tool-call limit of {limits.max_tool_calls} reached",
                )
                status = "limit:max_tool_calls"
            else:
                n_events = len(world.events)
                rec = execute_call(call, turn, tool_specs, world)
                for event in world.events[n_events:]:
                    event.update(call=len(calls), turn=turn)
            calls.append(rec)
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": observation_text(rec)})
        if status == "limit:max_tool_calls":
            break

    state_after = world.snapshot()
    record: dict[str, Any] = {
        **labels,
        "task_id": task.id,
        "family": task.family,
        "sample": sample,
        "shots": shots,
        "status": status,
        "final_answer": final_answer,
        "turns": turns,
        "messages": messages[prefix - 1 :],
        "n_demo_messages": len(demos),
        "calls": [c.model_dump(mode="json") for c in calls],
        "events": list(getattr(world, "events", [])),
        "state_diff": state_diff(state_before, state_after),
        "usage": usage,
        "cost": cost,
        "policy_s": round(policy_s, 6),
        "wall_s": round(time.perf_counter() - started, 6),
        "errors": errors,
    }
    record["scores"] = score_episode(suite, task, record, world)
    return record


def _unique_ids(tool_calls: list[ToolCall], turn: int) -> list[ToolCall]:
    """Give every call a non-empty id unique within the turn (models sometimes repeat or omit them)."""
    seen: set[str] = set()
    out = []
    for i, c in enumerate(tool_calls):
        cid = c.id or f"call_{turn}_{i}"
        if cid in seen:
            cid = f"{cid}_{i}"
        seen.add(cid)
        out.append(c if cid == c.id else c.model_copy(update={"id": cid}))
    return out
