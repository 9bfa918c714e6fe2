"""Transforms that change what a suite generates through its parameters (user, ordering,
reversibility and instructions axes), and :class:`SuiteView`, the delegating suite they — and
:func:`topoeval.protocol.topology.resolve` — return.

Each of these transforms needs the suite to expose the parameter it sets; a protocol naming one
on a suite without it is rejected when it loads.
"""

from __future__ import annotations

from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.suite import Suite, ToolSpec, TopologyDescriptor

from .args import HideSlotsArgs, NoArgs, SeedArgs
from .delegate import DelegatingSuite


class SuiteView(DelegatingSuite):
    """``inner`` with some parameters fixed, and/or seen with a given tool list and topology.

    Everything else (tasks, worlds, scores, the oracle) is the inner suite's (:class:`DelegatingSuite`).
    """

    def __init__(self, inner: Suite, overrides: dict[str, Any] | None = None,
                 topology_update: dict[str, Any] | None = None,
                 tools: list[ToolSpec] | None = None, topology: TopologyDescriptor | None = None):
        self.overrides = overrides or {}
        topology = (topology or inner.manifest.topology).model_copy(update=topology_update or {})
        manifest = inner.manifest.model_copy(update={"tools": tools if tools is not None else inner.tools,
                                                     "topology": topology})
        super().__init__(inner, manifest, topology_update)

    def parse_params(self, params: dict[str, Any] | None) -> Any:
        merged = dict(params or {})
        for key, value in self.overrides.items():
            if isinstance(value, list):
                merged[key] = sorted(set(merged.get(key, [])) | set(value))
            else:
                merged[key] = value
        return self.inner.parse_params(merged)


def _needs_param(suite: Suite, field: str, transform: str) -> None:
    if field not in suite.Params.model_fields:
        raise UserError(f"transform '{transform}' does not apply to suite '{suite.name}' "
                        f"(it has no '{field}' parameter)")


def hide_slots(suite: Suite, args: HideSlotsArgs) -> Suite:
    _needs_param(suite, "hide", "hide_slots")
    return SuiteView(suite, {"hide": list(args.slots)}, {"user": "hidden_slots"})


def shuffle_priority(suite: Suite, args: SeedArgs) -> Suite:
    _needs_param(suite, "priority_seed", "shuffle_priority")
    return SuiteView(suite, {"priority_seed": args.seed}, {"ordering": "partial_order"})


def merge_hold_pay(suite: Suite, args: NoArgs) -> Suite:
    _needs_param(suite, "booking", "merge_hold_pay")
    return SuiteView(suite, {"booking": "direct"}, {"reversibility": "some_irreversible"})


def refundable(suite: Suite, args: NoArgs) -> Suite:
    _needs_param(suite, "refundable", "refundable")
    return SuiteView(suite, {"refundable": True}, {"reversibility": "all_reversible"})


def split_instructions(suite: Suite, args: NoArgs) -> Suite:
    """One instruction becomes a conversation: the suite poses each task as dependent user
    instructions sent one at a time (suites with an ``instructions`` parameter; travel: the route
    first, dates and wishes next, "now book it" last)."""
    _needs_param(suite, "instructions", "split_instructions")
    return SuiteView(suite, {"instructions": "sequential"}, {"instructions": "sequential"})
