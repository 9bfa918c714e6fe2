"""The line of reasoning before a booking call (``Suite.rationale``), for SFT data with rationale.

A small model that books by copying a flight id out of a list of four to twelve search results
picks the wrong row: the choice rests on three constraints it never writes down. This line names
the chosen flight field by field — airline, date, price, and its id last — so each token the model
writes is a copy keyed on the ones before it (the airline from the traveller's wish, the date and
price from that airline's rows, the id from the row they single out), and "cheapest best fit" names
the traveller's rule. It is short on purpose: with the hold call it fits a 64-token turn (about 55
tokens), the budget `make leaderboard` runs the embedded models at. The wishes themselves are in the
conversation already (the prompt, or the traveller's answers).
"""

from __future__ import annotations

import json
from typing import Any

from topoeval.core.suite import Task

#: the calls that choose a flight
CHOOSING = ("hold_seat", "book")


def booking_rationale(task: Task, calls: list[dict[str, Any]]) -> str | None:
    """The line before a ``hold_seat``/``book`` call of one of the task's flights; None for any other turn."""
    chosen = next((c for c in calls if c["function"]["name"] in CHOOSING), None)
    if chosen is None:
        return None
    args = chosen["function"]["arguments"]
    flight_id = args.get("flight_id") if isinstance(args, dict) else _flight_id(args)
    flight = next((f for f in task.data["flights"] if f["flight_id"] == flight_id), None)
    if flight is None:
        return None
    return f"Cheapest best fit: {flight['airline']}, {flight['date']}, ${flight['price']}: {flight['flight_id']}."


def _flight_id(arguments: str) -> str | None:
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return None
    return value.get("flight_id") if isinstance(value, dict) else None
