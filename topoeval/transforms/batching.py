"""Dependency-axis transforms: how many independent look-ups one step of the agent can answer.

- ``batch_api`` adds, for every read-only, parallel-safe tool that does not talk to the user, a
  ``<tool>_batch`` tool taking ``requests`` (a list of that tool's arguments) and returning one
  result per request. The metrics read a batch call as its component calls made in the same turn,
  so batching is judged exactly like parallel calls. The oracle batches the same-tool look-ups
  it would have made in parallel. ``batch_api`` must be the last renaming-free step: a
  ``rename_*`` transform after it is rejected (it would not rename the fields inside ``requests``).
- ``no_batch`` removes every way to answer several look-ups at once: the topology takes one tool
  call per turn (further calls in a turn are refused, recorded as ``skipped``), and the
  parallelism dimension has no meaning there (``None``). The oracle makes one call per turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.core.suite import Effect, Suite, Task, ToolError, ToolSpec, TopologyDescriptor, World

from .args import NoArgs
from .params import SuiteView

BATCH_SUFFIX = "_batch"


def _batchable(spec: ToolSpec) -> bool:
    return spec.effect == Effect.read and spec.parallel_safe and not spec.user_channel


def batch_spec(spec: ToolSpec) -> ToolSpec:
    """The ``<tool>_batch`` spec of a batchable tool."""
    return ToolSpec(
        name=spec.name + BATCH_SUFFIX,
        description=f"Several independent {spec.name} look-ups in one call; returns one result per request, in order.",
        parameters={"type": "object",
                    "properties": {"requests": {"type": "array", "items": spec.parameters, "minItems": 1}},
                    "required": ["requests"], "additionalProperties": False},
        effect=Effect.read, idempotent=spec.idempotent, parallel_safe=True,
    )


def _with_batches(tools: list[ToolSpec]) -> list[ToolSpec]:
    names = {t.name for t in tools}
    return tools + [batch_spec(t) for t in tools if _batchable(t) and t.name + BATCH_SUFFIX not in names]


class BatchSuite(SuiteView):
    """``inner`` plus a batch tool per batchable tool."""

    def __init__(self, inner: Suite):
        super().__init__(inner, tools=_with_batches(list(inner.tools)),
                         topology_update={"schema_name": inner.manifest.topology.schema_name + "+batch"})
        self.batch_of = {t.name + BATCH_SUFFIX: t.name for t in inner.tools if _batchable(t)}

    def tools_for(self, params: BaseModel) -> list[ToolSpec]:
        return _with_batches(list(self.inner.tools_for(params)))

    def topology_for(self, params: BaseModel) -> TopologyDescriptor:
        inner = self.inner.topology_for(params)
        return inner.model_copy(update={"schema_name": inner.schema_name + "+batch"})

    def system_prompt(self, params: BaseModel) -> str:
        return self.inner.system_prompt(params) + " A tool ending in _batch answers several look-ups in one call."

    def outer_task(self, task: Task) -> Task:
        """The inner task, with each withheld tool's batch withheld too (and offered with it)."""
        if not task.withheld_tools:
            return task
        batch = {inner: outer for outer, inner in self.batch_of.items()}

        def with_batches(names: list[str]) -> list[str]:
            return names + [batch[n] for n in names if n in batch]

        return task.model_copy(update={
            "withheld_tools": with_batches(task.withheld_tools),
            "instructions": [i.model_copy(update={"tools_added": with_batches(i.tools_added)})
                             for i in task.instructions],
        })

    def make_world(self, task) -> World:
        return _BatchWorld(self.inner.make_world(task), self.batch_of)

    def score(self, task, final_answer: str | None, world: World) -> dict[str, float | None]:
        assert isinstance(world, _BatchWorld)
        return self.inner.score(task, final_answer, world.inner)

    def expand_calls(self, calls: list[dict[str, Any]], events: list[dict[str, Any]]):
        """Each executed batch call becomes its component calls, in the same turn."""
        calls, events = self.inner.expand_calls(calls, events)
        out: list[dict[str, Any]] = []
        new_index: dict[int, int] = {}
        for i, c in enumerate(calls):
            new_index[i] = len(out)
            inner = self.batch_of.get(c["name"])
            requests = (c.get("arguments") or {}).get("requests") if inner and c["status"] == "ok" else None
            if not isinstance(requests, list):
                out.append(c)
                continue
            obs = c.get("observation")
            results: list[Any] = obs if isinstance(obs, list) else [None] * len(requests)
            for k, (req, res) in enumerate(zip(requests, results, strict=False)):  # the world may answer fewer
                failed = isinstance(res, dict) and set(res) == {"error"}
                out.append({**c, "id": f"{c['id']}#{k}", "name": inner, "arguments": req,
                            "raw_arguments": json.dumps(req), "observation": res,
                            "status": "tool_error" if failed else "ok", "error": res["error"] if failed else None})
        return out, [{**e, "call": new_index[e["call"]]} if "call" in e else e for e in events]

    def oracle(self, task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        reply = self.inner.oracle(task, _split_batches(messages, self.batch_of), variant)
        groups: dict[str, list[ToolCall]] = {}
        for c in reply.tool_calls:
            groups.setdefault(c.name, []).append(c)
        calls = []
        for name, group in groups.items():
            batch = name + BATCH_SUFFIX
            if batch in self.batch_of and len(group) > 1:
                calls.append(ToolCall.make(group[0].id + "_batch", batch,
                                           {"requests": [json.loads(c.arguments) for c in group]}))
            else:
                calls.extend(group)
        return reply.model_copy(update={"tool_calls": calls})

    def collateral_call(self, task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        return self.inner.collateral_call(task, _split_batches(messages, self.batch_of))


class _BatchWorld(World):
    def __init__(self, inner: World, batch_of: dict[str, str]):
        self.inner, self.batch_of = inner, batch_of
        self.events = inner.events

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        inner = self.batch_of.get(name)
        if inner is None:
            return self.inner.call(name, arguments)
        results = []
        for req in arguments["requests"]:
            try:
                results.append(self.inner.call(inner, req))
            except ToolError as exc:
                results.append({"error": str(exc)})
        return results

    def snapshot(self) -> dict[str, Any]:
        return self.inner.snapshot()

    def close(self) -> None:
        self.inner.close()

    def end_instruction(self, index: int) -> None:
        self.inner.end_instruction(index)


def _split_batches(messages: list[dict[str, Any]], batch_of: dict[str, str]) -> list[dict[str, Any]]:
    """The conversation as if every batch call had been its component calls (for the inner oracle)."""
    out: list[dict[str, Any]] = []
    parts: dict[str, list[str]] = {}
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                inner = batch_of.get(c["function"]["name"])
                if inner is None:
                    calls.append(c)
                    continue
                try:
                    requests = json.loads(c["function"]["arguments"] or "{}").get("requests") or []
                except (json.JSONDecodeError, AttributeError):
                    requests = []
                parts[c["id"]] = [f"{c['id']}#{k}" for k in range(len(requests))]
                calls += [{**c, "id": pid, "function": {"name": inner, "arguments": json.dumps(r)}}
                          for pid, r in zip(parts[c["id"]], requests, strict=True)]
            m = {**m, "tool_calls": calls}
        elif m.get("role") == "tool" and m.get("tool_call_id") in parts:
            try:
                results = json.loads(m.get("content") or "[]")
            except json.JSONDecodeError:
                results = []
            results = results if isinstance(results, list) else []
            for pid, res in zip(parts[m["tool_call_id"]], results, strict=False):  # the world may answer fewer
                content = res if isinstance(res, str) else json.dumps(res, ensure_ascii=False)
                out.append({**m, "tool_call_id": pid, "content": content})
            continue
        out.append(m)
    return out


class OneCallPerTurnSuite(SuiteView):
    """``inner`` where each turn may carry one tool call."""

    def __init__(self, inner: Suite):
        super().__init__(inner, topology_update={"calls_per_turn": 1})

    def system_prompt(self, params: BaseModel) -> str:
        text = self.inner.system_prompt(params)
        text = re.sub(r"[^.]*\bin one turn\b[^.]*\.\s*", "", text)  # drop the invitation to parallel calls
        return text.rstrip() + " Make exactly one tool call per turn."

    def oracle(self, task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        reply = self.inner.oracle(task, messages, variant)
        return reply.model_copy(update={"tool_calls": reply.tool_calls[:1]})


def batch_api(suite: Suite, args: NoArgs) -> Suite:
    return BatchSuite(suite)


def no_batch(suite: Suite, args: NoArgs) -> Suite:
    return OneCallPerTurnSuite(suite)


__all__ = ["BatchSuite", "OneCallPerTurnSuite", "batch_api", "no_batch"]
