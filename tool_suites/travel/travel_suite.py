"""The travel suite: task generation, scoring against the expected state, and the oracle."""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from topoeval.gold import tool_results
from topoeval.messages import AssistantMessage, ToolCall, final
from topoeval.oracle import next_calls
from topoeval.state import diff_matches, state_diff
from topoeval.suite import SPLITS, Suite, Task, World, task_id, task_seed

from . import generator, tasks
from .oracle import active_holds, plan, refused, resolve_hold
from .world import TravelWorld

Family = Literal["full", "underspecified", "tradeoff", "events", "flexible"]


class TravelParams(BaseModel):
    """Parameters of the travel suite a protocol topology may set."""

    model_config = ConfigDict(extra="forbid")

    families: list[Family] = Field(
        default_factory=lambda: list(generator.FAMILIES), min_length=1, description="Task families to draw, round-robin."
    )
    hold_ttl: int = Field(default=10, ge=2, le=100, description="Calls after which an unpaid hold expires.")
    cancel_fee: float = Field(default=0.2, ge=0.0, le=1.0, description="Share of the price kept when cancelling.")
    hide: list[Literal["budget", "airline", "dates"]] = Field(
        default_factory=list, description="Slots hidden behind the user on every family but trade-offs (hide_slots)."
    )
    priority_seed: int | None = Field(default=None, description="Re-draws trade-off priority orders (shuffle_priority).")


SYSTEM_PROMPT = (
    "You book exactly one flight for the traveller with the tools. If a detail you need (budget, dates, "
    "airline) is not given, ask the traveller with ask_user. When not every wish can be met, follow the "
    "traveller's priority order; among equally good flights choose the cheapest. Hold a seat, ask the "
    "traveller to confirm that exact flight (name its flight id), then pay. Payments cannot be undone. "
    "Independent look-ups may go in one turn. Finish with a one-line summary and no tool call."
)


class TravelSuite(Suite):
    Params = TravelParams

    def system_prompt(self, params: BaseModel) -> str:
        return SYSTEM_PROMPT

    def generate(self, params: TravelParams, split, seed: int, index: int) -> Task:
        s = task_seed(self.name, params, split, seed, index)
        family = params.families[index % len(params.families)]
        priority_rng = None if params.priority_seed is None else random.Random(f"{params.priority_seed}:{s}")
        sc = generator.generate(random.Random(s), SPLITS.index(split), len(SPLITS), family,
                                tuple(params.hide), priority_rng)
        given, hidden = tasks.slots(sc)
        expected, allow = tasks.expected_state(sc)
        return Task(
            id=task_id(self.name, split, index, s),
            suite=self.name,
            split=split,
            index=index,
            family=family,
            prompt=tasks.prompt(sc),
            expected_state=expected,
            allow_list=allow,
            given_slots=given,
            hidden_slots=hidden,
            priority=sc.priority,
            trade_off=family == "tradeoff",
            gold=tasks.gold_dag(sc),
            irreversible_tools=["pay", "cancel_booking"],
            commit_targets={"pay": [f.id for f in sc.searchable() if f.seats > 0]},
            options={f.id: sc.satisfied(f) for f in sc.searchable() if f.seats > 0},
            data={
                "flights": [f.public() for f in sc.flights],
                "events": sc.events,
                "truth": tasks.truth(sc),
                "balance": tasks.BALANCE,
                "hold_ttl": params.hold_ttl,
                "cancel_fee": params.cancel_fee,
                "month": sc.month,
                "preferred_dates": sc.preferred_dates,
                "search_dates": sc.search_dates(),
            },
        )

    def make_world(self, task: Task) -> TravelWorld:
        world = TravelWorld(task.data)
        world.initial = world.snapshot()
        return world

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        """success: one paid booking on the target, no hold left active, only allowed changes."""
        assert isinstance(world, TravelWorld)
        target = task.data["truth"]["target"]
        paid = [b for b in world.bookings.values() if b["status"] == "paid"]
        active = [h for h in world.holds.values() if h["status"] == "active"]
        diff = state_diff(world.initial, world.snapshot())
        ok = (
            len(paid) == 1
            and paid[0]["flight"] == target
            and len(world.bookings) == 1
            and not active
            and diff_matches(diff, task.expected_state or {}, task.allow_list)
        )
        return {"success": float(ok)}

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        """Reference policies: see :mod:`.oracle` for what each variant does."""
        if refused(messages):  # only a flawed oracle ever hears "No."
            holds = active_holds(messages)
            if holds:
                return AssistantMessage(tool_calls=[ToolCall.make("release", "release_hold", {"hold_id": holds[-1]})])
            return final("The traveller did not confirm; nothing was booked.")
        step = next_calls(plan(task, variant), messages, self.tools, variant, resolve_hold)
        if step is not None:
            return step
        paid = [args for name, args, text in tool_results(messages) if name == "pay" and "booking_id" in text]
        return final("Booked the flight." if paid else "No suitable flight was found; nothing was booked.")
