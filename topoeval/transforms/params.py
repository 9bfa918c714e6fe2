"""Transforms that change what a suite generates through its parameters (user, ordering,
reversibility and instructions axes), and :class:`SuiteView`, the delegating suite they — and
:func:`topoeval.protocol.topology.resolve` — return.

Each of these transforms needs the suite to expose the parameter it sets; a protocol naming one
on a suite without it is rejected when it loads.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.suite import Suite, Task, ToolSpec, TopologyDescriptor, World


class SuiteView(Suite):
    """``inner`` with some parameters fixed, and/or seen with a given tool list and topology.

    Everything else (tasks, worlds, scores, the oracle) is the inner suite's.
    """

    def __init__(self, inner: Suite, overrides: dict[str, Any] | None = None,
                 topology_update: dict[str, Any] | None = None,
                 tools: list[ToolSpec] | None = None, topology: TopologyDescriptor | None = None):
        self.inner = inner
        self.Params = inner.Params  # type: ignore[misc]  # a view takes its inner suite's params model
        self.overrides = overrides or {}
        self.topology_update = topology_update or {}
        topology = (topology or inner.manifest.topology).model_copy(update=self.topology_update)
        manifest = inner.manifest.model_copy(update={"tools": tools if tools is not None else inner.tools,
                                                     "topology": topology})
        super().__init__(manifest, inner.folder)

    def parse_params(self, params: dict[str, Any] | None) -> BaseModel:
        merged = dict(params or {})
        for key, value in self.overrides.items():
            if isinstance(value, list):
                merged[key] = sorted(set(merged.get(key, [])) | set(value))
            else:
                merged[key] = value
        return self.inner.parse_params(merged)

    def tools_for(self, params: BaseModel) -> list[ToolSpec]:
        return self.inner.tools_for(params)

    def topology_for(self, params: BaseModel) -> TopologyDescriptor:
        return self.inner.topology_for(params).model_copy(update=self.topology_update)

    def system_prompt(self, params: BaseModel) -> str:
        return self.inner.system_prompt(params)

    def expand_calls(self, calls: list[dict[str, Any]], events: list[dict[str, Any]]):
        return self.inner.expand_calls(calls, events)

    def generate(self, params, split, seed, index) -> Task:
        return self.inner.generate(params, split, seed, index)

    def pool_size(self, params: BaseModel, split) -> int | None:
        return self.inner.pool_size(params, split)

    def make_world(self, task: Task) -> World:
        return self.inner.make_world(task)

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        return self.inner.score(task, final_answer, world)

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        return self.inner.oracle(task, messages, variant)


def _needs_param(suite: Suite, field: str, transform: str) -> None:
    if field not in suite.Params.model_fields:
        raise UserError(f"transform '{transform}' does not apply to suite '{suite.name}' (it has no '{field}' parameter)")


def hide_slots(suite: Suite, args: dict[str, Any]) -> Suite:
    _needs_param(suite, "hide", "hide_slots")
    return SuiteView(suite, {"hide": list(args.get("slots", []))}, {"user": "hidden_slots"})


def shuffle_priority(suite: Suite, args: dict[str, Any]) -> Suite:
    _needs_param(suite, "priority_seed", "shuffle_priority")
    return SuiteView(suite, {"priority_seed": int(args.get("seed", 0))}, {"ordering": "partial_order"})


def merge_hold_pay(suite: Suite, args: dict[str, Any]) -> Suite:
    _needs_param(suite, "booking", "merge_hold_pay")
    return SuiteView(suite, {"booking": "direct"}, {"reversibility": "some_irreversible"})


def refundable(suite: Suite, args: dict[str, Any]) -> Suite:
    _needs_param(suite, "refundable", "refundable")
    return SuiteView(suite, {"refundable": True}, {"reversibility": "all_reversible"})


def split_instructions(suite: Suite, args: dict[str, Any]) -> Suite:
    """One instruction becomes a conversation: the suite poses each task as dependent user
    instructions sent one at a time (suites with an ``instructions`` parameter; travel: the route
    first, dates and wishes next, "now book it" last)."""
    _needs_param(suite, "instructions", "split_instructions")
    return SuiteView(suite, {"instructions": "sequential"}, {"instructions": "sequential"})
