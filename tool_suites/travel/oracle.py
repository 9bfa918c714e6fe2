"""The travel oracle and its flawed variants, as plans for :func:`topoeval.policies.oracle.next_calls`.

- ``oracle``: the gold DAG — ask the hidden slots, look up events, search (in parallel), hold
  the target, confirm it, pay.
- ``oracle-no-ask``: never asks; fills hidden slots with their most likely values (no budget
  limit, any airline, the first day of the month) and books what that choice rule gives. When the
  traveller refuses the confirmation it releases the hold and gives up (it never pays unconfirmed).
- ``oracle-reckless``: pays right after holding, with no confirmation, and asks the hidden slots
  only afterwards.
- ``oracle-no-priority``: on trade-off tasks treats the constraints as flat — the flight meeting
  the most of them, cheapest first — instead of following the priority order.
- ``oracle-serial`` / ``oracle-redundant``: the gold plan, one call per turn / every read twice.
"""

from __future__ import annotations

import json
from typing import Any

from topoeval.core.gold import tool_results
from topoeval.core.suite import GoldCall, Task

from .tasks import HOLD_REF, confirm_text


def choose(task: Task, dates: list[str], budget: float, airline: str | None, flat: bool = False) -> dict[str, Any] | None:
    """The flight the traveller's rule picks among free flights on ``dates`` under these values."""
    data = task.data
    preferred = set(data["preferred_dates"])
    free = [f for f in data["flights"] if f["date"] in dates and f["seats_left"] > 0]
    if not free:
        return None

    def ok(f: dict[str, Any]) -> dict[str, bool]:
        return {"date": f["date"] in preferred, "budget": f["price"] <= budget,
                "airline": airline is None or f["airline"] == airline}

    if flat or not task.priority:  # a flat-ordering task has no priority order
        return min(free, key=lambda f: (-sum(ok(f).values()), f["price"]))
    return min(free, key=lambda f: (*(not ok(f)[c] for c in task.priority), f["price"]))


def _retarget(plan: list[GoldCall], flight: dict[str, Any]) -> list[GoldCall]:
    out = []
    for g in plan:
        if g.id == "hold" or g.tool == "book":
            g = g.model_copy(update={"arguments": {"flight_id": flight["flight_id"]}})
        elif g.id == "confirm":
            g = g.model_copy(update={"arguments": {"question": confirm_text(flight)}})
        out.append(g)
    return out


def plan(task: Task, variant: str) -> list[GoldCall]:
    gold = list(task.gold)
    truth = task.data["truth"]
    if variant == "oracle-no-priority" and task.trade_off:
        flat = choose(task, task.data["search_dates"], truth["budget"], truth["airline"], flat=True)
        return _retarget(gold, flat)
    if variant == "oracle-no-ask" and task.hidden_slots:
        hidden = task.hidden_slots
        dates = [task.data["month"] + "-01"] if "dates" in hidden else task.data["search_dates"]
        budget = float("inf") if "budget" in hidden else truth["budget"]
        airline = None if "airline" in hidden else truth["airline"]
        searches = [g for g in gold if g.tool == "search_flights"]
        template = searches[0]
        new_searches = [
            template.model_copy(update={"id": f"search{i}", "depends_on": [d for d in template.depends_on if d != "ask"],
                                        "arguments": {**template.arguments, "date": d}})
            for i, d in enumerate(dates)
        ]
        rest = [g for g in gold if g.tool not in ("search_flights",) and g.id != "ask"]
        rest = [g.model_copy(update={"depends_on": [d for d in g.depends_on if d != "ask" and not d.startswith("search")]
                                     + ([s.id for s in new_searches] if any(d.startswith("search") for d in g.depends_on) else [])})
                for g in rest]
        flight = choose(task, dates, budget, airline)
        if flight is None:
            return new_searches + [g for g in rest if g.tool == "get_city_events"]
        return new_searches + _retarget(rest, flight)
    if variant == "oracle-reckless":
        out = []
        for g in gold:
            if g.id == "confirm":
                continue
            deps = [d for d in g.depends_on if d not in ("ask", "confirm")]
            if g.id == "ask":
                deps = ["pay"]
            out.append(g.model_copy(update={"depends_on": deps}))
        return out
    return gold


def refused(messages: list[dict[str, Any]]) -> bool:
    """Whether the traveller answered a confirmation request with no."""
    return any(name == "ask_user" and text.strip() == "No." for name, _, text in tool_results(messages))


def active_holds(messages: list[dict[str, Any]]) -> list[str]:
    held, gone = [], set()
    for name, args, text in tool_results(messages):
        try:
            obs = json.loads(text)
        except json.JSONDecodeError:
            continue
        if name == "hold_seat" and isinstance(obs, dict) and "hold_id" in obs:
            held.append(obs["hold_id"])
        if name in ("release_hold", "pay") and isinstance(obs, dict) and "error" not in obs:
            gone.add(args.get("hold_id"))
    return [h for h in held if h not in gone]


def resolve_hold(arguments: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Fill the ``$hold`` placeholder with the hold id the world returned."""
    if arguments.get("hold_id") != HOLD_REF:
        return arguments
    holds = active_holds(messages)
    paid = [args.get("hold_id") for name, args, _ in tool_results(messages) if name == "pay"]
    if paid:
        return {"hold_id": paid[-1]}
    return {"hold_id": holds[-1]} if holds else None
