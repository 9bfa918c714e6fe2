"""From a generated scenario to a Task: the prompt, the hidden slots, the gold DAG, the expected state."""

from __future__ import annotations

from datetime import date
from typing import Any

from topoeval.core.suite import GoldCall

from .generator import Scenario

BALANCE = 5000
#: Placeholder in gold arguments: "the hold_id returned by gold node 'hold'".
HOLD_REF = "$hold"


def month_name(month: str) -> str:
    return date.fromisoformat(month + "-01").strftime("%B %Y")


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" or {items[-1]}"


def prompt(sc: Scenario) -> str:
    """The traveller's opening message; hidden slots are hinted at, never stated."""
    route = f"Please book me a flight from {sc.origin} to {sc.destination}"
    if "dates" in sc.hidden:
        when = f" in {month_name(sc.month)}; I have specific dates in mind."
    elif sc.family == "events":
        when = f" between {sc.candidate_dates[0]} and {sc.candidate_dates[-1]}, but avoid the {sc.avoid[0]} there."
    elif sc.family == "tradeoff":
        other = [d for d in sc.candidate_dates if d not in sc.preferred_dates]
        when = f". I'd like to fly on {sc.preferred_dates[0]} ({_or(other)} also works)."
    elif sc.family == "flexible":
        when = f" on any of these dates: {_or(sc.candidate_dates)}."
    else:
        when = f" on {_or(sc.candidate_dates)}."
    return " ".join([route + when, *wishes(sc)])


def wishes(sc: Scenario) -> list[str]:
    """Budget, airline and (on trade-offs) the priority order, as the traveller states them."""
    parts = ["I have a budget in mind." if "budget" in sc.hidden else f"My budget is ${sc.budget}."]
    if "airline" in sc.hidden:
        parts.append("I have an airline I prefer.")
    else:
        parts.append(f"I want to fly with {sc.airline}." if sc.airline else "Any airline is fine.")
    if sc.family == "tradeoff" and sc.flat:
        parts.append("If not everything fits, I want as many of these wishes met as possible.")
    elif sc.family == "tradeoff":
        parts.append(
            f"If not everything fits, what matters most is the {sc.priority[0]}, then the {sc.priority[1]}, "
            f"then the {sc.priority[2]}."
        )
    return parts


#: The last instruction of a sequential travel task (``split_instructions``).
BOOK_NOW = "Now book it."


def opening(sc: Scenario) -> str:
    """The first instruction of a sequential task: the route only."""
    return f"I'm planning a trip from {sc.origin} to {sc.destination}."


def details(sc: Scenario) -> str:
    """The second instruction of a sequential task: dates and wishes, and a request to find (not book)."""
    if "dates" in sc.hidden:
        when = f"I want to travel in {month_name(sc.month)}; I have specific dates in mind."
    elif sc.family == "events":
        when = f"I can fly between {sc.candidate_dates[0]} and {sc.candidate_dates[-1]}, but avoid the {sc.avoid[0]} there."
    elif sc.family == "tradeoff":
        other = [d for d in sc.candidate_dates if d not in sc.preferred_dates]
        when = f"I'd like to fly on {sc.preferred_dates[0]} ({_or(other)} also works)."
    elif sc.family == "flexible":
        when = f"I can fly on any of these dates: {_or(sc.candidate_dates)}."
    else:
        when = f"I want to fly on {_or(sc.candidate_dates)}."
    return " ".join([when, *wishes(sc), "Find me the best flight, but don't book anything yet."])


def acceptable(sc: Scenario) -> list[str]:
    """Free flights the traveller would confirm: every *hidden* constraint met (the traveller does
    not re-judge what the prompt already stated, nor the priority order)."""
    out = []
    for f in sc.searchable():
        ok = sc.satisfied(f)
        if f.seats > 0 and all(ok[s if s != "dates" else "date"] for s in sc.hidden):
            out.append(f.id)
    return out


def truth(sc: Scenario) -> dict[str, Any]:
    """What the simulated traveller knows."""
    return {
        "target": sc.target().id,
        "acceptable": acceptable(sc),
        "budget": sc.budget,
        "airline": sc.airline,
        "candidate_dates": sc.candidate_dates,
        "priority": [] if sc.flat else sc.priority,
        "origin": sc.origin,
        "destination": sc.destination,
    }


def slots(sc: Scenario) -> tuple[dict[str, Any], dict[str, Any]]:
    """(given slots, hidden slots)."""
    values = {"budget": sc.budget, "airline": sc.airline, "dates": sc.candidate_dates}
    given = {"route": [sc.origin, sc.destination]}
    given.update({k: v for k, v in values.items() if k not in sc.hidden})
    if sc.family == "tradeoff" and not sc.flat:
        given["priority"] = sc.priority
    return given, {k: values[k] for k in sc.hidden}


def ask_question(hidden: list[str]) -> str:
    wording = {"budget": "your budget", "airline": "which airline you prefer", "dates": "which dates you can travel"}
    return "Could you tell me " + " and ".join(wording[s] for s in hidden) + "?"


def confirm_text(flight: dict[str, Any]) -> str:
    f = flight
    return f"Please confirm: shall I pay for flight {f['flight_id']} ({f['airline']}, {f['date']} {f['depart']}) at ${f['price']}?"


def confirm_question(sc: Scenario) -> str:
    return confirm_text(sc.target().public())


def gold_dag(sc: Scenario, confirm: bool = True, direct: bool = False, sequential: bool = False) -> list[GoldCall]:
    """ask (hidden slots) / events -> searches -> hold -> confirm -> pay.

    ``confirm=False`` (refundable payment) drops the confirmation; ``direct`` (``merge_hold_pay``)
    replaces hold + pay by one ``book`` of the target, confirmed first. The commit node keeps the
    id ``pay`` in every variant. ``sequential`` (``split_instructions``): the look-ups belong to the
    second instruction (dates and wishes), the booking to the third ("now book it").
    """
    gold = _gold_dag(sc, confirm, direct)
    if not sequential:
        return gold
    booking = {"hold", "confirm", "pay"}
    return [g.model_copy(update={"instruction": 2 if g.id in booking else 1}) for g in gold]


def _gold_dag(sc: Scenario, confirm: bool, direct: bool) -> list[GoldCall]:
    gold: list[GoldCall] = []
    if sc.hidden:
        gold.append(GoldCall(id="ask", tool="ask_user", arguments={"question": ask_question(sc.hidden)}, match="ask"))
    search_deps = []
    if "dates" in sc.hidden:
        search_deps.append("ask")
    if sc.family == "events":
        gold.append(GoldCall(id="events", tool="get_city_events", arguments={"city": sc.destination, "month": sc.month}))
        search_deps.append("events")
    searches = []
    for i, d in enumerate(sc.search_dates()):
        sid = f"search{i}"
        searches.append(sid)
        gold.append(GoldCall(id=sid, tool="search_flights",
                             arguments={"origin": sc.origin, "destination": sc.destination, "date": d},
                             depends_on=list(search_deps)))
    hold_deps = searches + (["ask"] if sc.hidden and "ask" not in search_deps else [])
    target = sc.target().id
    before_commit = hold_deps
    if not direct:
        gold.append(GoldCall(id="hold", tool="hold_seat", arguments={"flight_id": target}, depends_on=hold_deps))
        before_commit = ["hold"]
    if confirm:
        gold.append(GoldCall(id="confirm", tool="ask_user", arguments={"question": confirm_question(sc)},
                             depends_on=list(before_commit), match="confirm"))
        before_commit = [*before_commit, "confirm"] if not direct else ["confirm"]
    if direct:
        gold.append(GoldCall(id="pay", tool="book", arguments={"flight_id": target}, depends_on=before_commit))
    else:
        gold.append(GoldCall(id="pay", tool="pay", arguments={"hold_id": HOLD_REF}, depends_on=before_commit,
                             match="tool"))
    return gold


def expected_state(sc: Scenario) -> tuple[dict[str, list[Any]], list[str]]:
    """(exact changes of the stable keys, allow-list patterns for the rest)."""
    t = sc.target()
    expected = {
        "balance": [BALANCE, BALANCE - t.price],
        f"revenue.{t.airline}": [0, t.price],
        f"seats.{t.id}": [t.seats, t.seats - 1],
    }
    return expected, ["holds.*", "bookings.*"]
