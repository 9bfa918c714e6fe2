"""The travel world: stateful booking with holds, an irreversible payment, and a user to ask.

State: the traveller's ``balance``, airline ``revenue``, free ``seats`` per flight, ``holds``
(active | released | expired | paid) and ``bookings`` (paid | cancelled). Holds take a seat and
expire after ``hold_ttl`` further calls; paying moves money for good; cancelling refunds the
price less a fee. Money is conserved: balance + revenue never changes. Topology variants: a
refundable world (no fee, nothing irreversible) and a merged one where ``book`` holds and pays
at once; the world only accepts the tools its task offers (``data["tools"]``).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from topoeval.core.suite import ToolError, World
from topoeval.core.users import active_user, active_user_options

from .user import Traveller

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MONTH = re.compile(r"^\d{4}-\d{2}$")


class TravelWorld(World):
    def __init__(self, data: dict[str, Any]):
        self.flights = {f["flight_id"]: dict(f) for f in data["flights"]}
        self.city_events = data["events"]
        self.destination = data["truth"]["destination"]
        self.origin = data["truth"]["origin"]
        self.hold_ttl = data["hold_ttl"]
        self.cancel_fee = data["cancel_fee"]
        self.refundable = data.get("refundable", False)
        self.offered = set(data["tools"]) if "tools" in data else None
        self.balance = data["balance"]
        self.revenue = {a: 0 for a in sorted({f["airline"] for f in data["flights"]})}
        self.seats = {fid: f["seats_left"] for fid, f in self.flights.items()}
        self.holds: dict[str, dict[str, Any]] = {}
        self.bookings: dict[str, dict[str, Any]] = {}
        self.clock = 0
        self.events: list[dict[str, Any]] = []
        self.user = make_traveller(data, self.events, self.holds)

    # -- the contract -------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        return {
            "balance": self.balance,
            "revenue": dict(self.revenue),
            "seats": dict(self.seats),
            "holds": {h: dict(v) for h, v in self.holds.items()},
            "bookings": {b: dict(v) for b, v in self.bookings.items()},
        }

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.clock += 1
        self._expire_holds()
        handler = getattr(self, f"_tool_{name}", None)
        if handler is None or (self.offered is not None and name not in self.offered):
            raise ToolError(f"unknown tool '{name}'")
        return handler(**arguments)

    # -- tools ----------------------------------------------------------------------------
    def _tool_search_flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        _check_date(date)
        if origin.strip().lower() != self.origin.lower() or destination.strip().lower() != self.destination.lower():
            return []
        return [
            {**f, "seats_left": self.seats[fid]}
            for fid, f in sorted(self.flights.items(), key=lambda kv: kv[1]["depart"])
            if f["date"] == date
        ]

    def _tool_get_city_events(self, city: str, month: str) -> list[dict[str, str]]:
        if not MONTH.match(month):
            raise ToolError(f"month must be YYYY-MM, got '{month}'")
        if city.strip().lower() != self.destination.lower():
            return []
        return [e for e in self.city_events if e["start"][:7] <= month <= e["end"][:7]]

    def _tool_ask_user(self, question: str) -> str:
        return self.user.ask(question)

    def _tool_hold_seat(self, flight_id: str) -> dict[str, Any]:
        if flight_id not in self.flights:
            raise ToolError(f"unknown flight '{flight_id}'")
        if self.seats[flight_id] <= 0:
            raise ToolError(f"flight {flight_id} is sold out")
        hold_id = f"H{len(self.holds) + 1}"
        self.seats[flight_id] -= 1
        self.holds[hold_id] = {"flight": flight_id, "status": "active", "created": self.clock}
        return {"hold_id": hold_id, "flight_id": flight_id, "price": self.flights[flight_id]["price"],
                "expires_after_calls": self.hold_ttl}

    def _tool_release_hold(self, hold_id: str) -> dict[str, Any]:
        hold = self._active_hold(hold_id)
        hold["status"] = "released"
        self.seats[hold["flight"]] += 1
        return {"hold_id": hold_id, "status": "released"}

    def _tool_pay(self, hold_id: str) -> dict[str, Any]:
        return self._pay(hold_id, "pay")

    def _tool_book(self, flight_id: str) -> dict[str, Any]:
        """Hold and pay in one step (the ``merge_hold_pay`` topology): nothing is held if paying fails."""
        hold_id = self._tool_hold_seat(flight_id)["hold_id"]
        try:
            return self._pay(hold_id, "book")
        except ToolError:
            self._tool_release_hold(hold_id)
            raise

    def _pay(self, hold_id: str, tool: str) -> dict[str, Any]:
        hold = self._active_hold(hold_id)
        flight = self.flights[hold["flight"]]
        if self.balance < flight["price"]:
            raise ToolError(f"insufficient funds: balance ${self.balance}, price ${flight['price']}")
        booking_id = f"B{len(self.bookings) + 1}"
        self.balance -= flight["price"]
        self.revenue[flight["airline"]] += flight["price"]
        hold["status"] = "paid"
        self.bookings[booking_id] = {"flight": hold["flight"], "hold": hold_id, "price": flight["price"], "status": "paid"}
        self._commit(tool, hold["flight"])
        return {"booking_id": booking_id, "flight_id": hold["flight"], "charged": flight["price"]}

    def _tool_cancel_booking(self, booking_id: str) -> dict[str, Any]:
        booking = self.bookings.get(booking_id)
        if booking is None:
            raise ToolError(f"unknown booking '{booking_id}'")
        if booking["status"] != "paid":
            raise ToolError(f"booking {booking_id} is already {booking['status']}")
        fee = round(booking["price"] * self.cancel_fee)
        refund = booking["price"] - fee
        self.balance += refund
        self.revenue[self.flights[booking["flight"]]["airline"]] -= refund
        self.seats[booking["flight"]] += 1
        booking["status"] = "cancelled"
        self._commit("cancel_booking", booking["flight"])
        return {"booking_id": booking_id, "status": "cancelled", "refund": refund, "fee": fee}

    # -- helpers --------------------------------------------------------------------------
    def _commit(self, tool: str, flight_id: str) -> None:
        """Record a committing call that took effect (nothing is irreversible when refundable)."""
        self.events.append({"type": "commit", "tool": tool, "object": flight_id, "irreversible": not self.refundable})

    def _active_hold(self, hold_id: str) -> dict[str, Any]:
        hold = self.holds.get(hold_id)
        if hold is None:
            raise ToolError(f"unknown hold '{hold_id}'")
        if hold["status"] != "active":
            raise ToolError(f"hold {hold_id} is {hold['status']}")
        return hold

    def _expire_holds(self) -> None:
        for hold in self.holds.values():
            if hold["status"] == "active" and self.clock - hold["created"] > self.hold_ttl:
                hold["status"] = "expired"
                self.seats[hold["flight"]] += 1


def make_traveller(data: dict[str, Any], events: list[dict[str, Any]], holds: dict[str, dict[str, Any]]) -> Traveller:
    """The rule-based traveller, or the LLM one when the run has a user model (``--user-model``)."""
    model = active_user().model
    if model is None:
        return Traveller(data["truth"], events, holds, data["flights"])
    from topoeval.policies.user_model import user_model

    from .llm_user import LLMTraveller

    return LLMTraveller(data["truth"], events, holds, data["flights"], user_model(model, active_user_options()))


def _check_date(value: str) -> None:
    if not DATE.match(value):
        raise ToolError(f"date must be YYYY-MM-DD, got '{value}'")
    try:
        date.fromisoformat(value)
    except ValueError:
        raise ToolError(f"'{value}' is not a calendar date") from None
