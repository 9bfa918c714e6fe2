"""The optional LLM traveller (``--user-model M``): a model plays the user from the same hidden slots.

It gets a fixed instruction (:data:`INSTRUCTION`, versioned by
:data:`topoeval.core.users.USER_INSTRUCTION_VERSION`) holding what the deterministic traveller
knows — budget, airline, dates, route, priority order, that it does not know the event dates — and
the held seats, and replies to one question with one JSON object: the slots the question asks
about, the flight it asks to confirm (or null), and its answer in its own words.

What stays deterministic: whether a confirmed flight is acceptable (the hidden constraints decide,
exactly as for the rule-based traveller: "Yes, go ahead." / "No."), and the events the metrics read
(an ``ask`` event with the model's slots, a ``confirm`` event with its flight). A reply that is not
such a JSON object, or names slots that do not exist, is the user model's fault, not the agent's:
the question counts as unanswered (``"I'm not sure what you mean."``) and the event carries
``user_error``. The deterministic traveller stays the default and the reference;
``topoeval user-agreement`` measures how far the two read a run's questions alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .reading import Reading
from .user import Traveller

SLOTS = ("budget", "airline", "dates", "priority", "events", "route")

INSTRUCTION = """You are a traveller who asked a booking agent to book one flight. You know:
- budget: {budget}
- airline: {airline}
- dates you can fly: {dates}
- route: {origin} to {destination}
- priority: {priority}
- events in the destination city: you do not know their dates (the agent can look them up)
- seats the agent holds for you: {holds}

The agent asks you one question. Decide what it asks about, using these names: "budget", "airline",
"dates", "priority" (how your wishes rank against each other), "route", "events". If it asks you to
confirm paying for or booking one flight, give that flight's id (for a held seat, the id of the flight
it holds). Answer only what is asked, in one or two sentences, and never volunteer anything else.

Reply with one JSON object and nothing else:
{{"slots": [names the question asks about], "confirm": "<flight id>" or null, "answer": "<your reply>"}}"""

JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def instruction(truth: dict[str, Any], holds: dict[str, dict[str, Any]]) -> str:
    """The fixed instruction filled with one task's hidden slots and the world's held seats."""
    t = truth
    held = [f"{h} on flight {v['flight']}" for h, v in holds.items() if v.get("status") == "active"]
    return INSTRUCTION.format(
        budget=f"at most ${t['budget']}", airline=t["airline"] or "any airline is fine",
        dates=" or ".join(t["candidate_dates"]), origin=t["origin"], destination=t["destination"],
        priority=(" > ".join(t["priority"]) + ", then the lowest price") if t["priority"]
        else "as many of your wishes as possible, then the lowest price",
        holds=", ".join(held) or "none")


def parse_reply(text: str) -> tuple[Reading, str | None, str | None]:
    """(reading, answer text, error) from the user model's reply."""
    m = JSON_OBJECT.search(text or "")
    try:
        data = json.loads(m.group(0)) if m else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        return Reading("ask", []), None, "reply is not a JSON object"
    flight = data.get("confirm")
    if isinstance(flight, str) and flight.strip() and flight.strip().lower() not in ("null", "none"):
        return Reading("confirm", flight=re.sub(r"[\s-]", "", flight).upper()), None, None
    slots = data.get("slots")
    if not isinstance(slots, list) or not all(isinstance(s, str) for s in slots):
        return Reading("ask", []), None, "slots is not a list of names"
    unknown = [s for s in slots if s not in SLOTS]
    if unknown:
        return Reading("ask", []), None, f"unknown slot {unknown[0]!r}"
    answer = data.get("answer")
    return Reading("ask", list(dict.fromkeys(slots))), answer if isinstance(answer, str) and answer.strip() else None, None


class LLMTraveller(Traveller):
    """The traveller played by a model (module docstring); ``client`` has ``complete(system, user)``."""

    def __init__(self, truth: dict[str, Any], events: list[dict[str, Any]], holds: dict[str, dict[str, Any]],
                 flights: list[dict[str, Any]] | None, client: Any):
        super().__init__(truth, events, holds, flights)
        self.client = client
        self._holds = holds

    def read_llm(self, question: str) -> tuple[Reading, str | None, str | None]:
        """The model's reading of one question (no event recorded); a hold id it confirms is its flight."""
        reading, answer, error = parse_reply(self.client.complete(instruction(self.truth, self._holds), question))
        if reading.kind == "confirm" and reading.flight in self._holds:
            reading.flight = self._holds[reading.flight]["flight"]
        return reading, answer, error

    def read(self, question: str) -> Reading:
        return self.read_llm(question)[0]

    def ask(self, question: str) -> str:
        reading, answer, error = self.read_llm(question)
        if reading.kind == "confirm":
            ok = reading.flight in self.truth["acceptable"]
            self.events.append({"type": "confirm", "object": reading.flight, "answer": "yes" if ok else "no"})
            return "Yes, go ahead." if ok else "No."
        event: dict[str, Any] = {"type": "ask", "slots": reading.slots, "question": question[:300]}
        if error:
            event["user_error"] = error
        self.events.append(event)
        if not reading.slots:
            return "I'm not sure what you mean."
        return answer or " ".join(self._answer(s) for s in reading.slots)
