"""The deterministic rule-based traveller behind ``ask_user``.

A question is read in this order:

1. **Confirmation** — it names a flight id (e.g. ``AS12301``) or a hold id (``H1``): the answer is
   ``yes`` when that flight is acceptable under the *hidden* constraints (a free flight on the
   traveller's dates that meets every slot the prompt did not state) and a reason-free ``no``
   otherwise. The traveller does not re-check what the prompt stated or the priority order: that
   is the agent's job, judged by ``success`` and ``priority``. Recorded as a ``confirm`` event.
2. **Slot question** — every slot whose name or a synonym appears (whole words, case-insensitive)
   is answered with its value, and nothing else:

   | slot | synonyms |
   |---|---|
   | budget | budget, price, prices, cost, costs, spend, afford, money, expensive, cheap, much |
   | airline | airline, airlines, carrier, carriers, fly with |
   | dates | date, dates, day, days, when, travel window, depart, departure, leave |
   | priority | priority, priorities, matters most, most important, prefer most, rank |
   | events | event, events, festival, season, avoid |
   | route | origin, destination, from where, where to, route |

   Questions about slots the task already stated (route, priority, given budget...) are answered
   but count as over-asking; ``events`` is retrievable with ``get_city_events`` and is answered
   with "please check". Recorded as an ``ask`` event with the slots it matched.
3. Anything else gets "I'm not sure what you mean." (an ``ask`` event with no slot).
"""

from __future__ import annotations

import re
from typing import Any

SYNONYMS: dict[str, tuple[str, ...]] = {
    "budget": ("budget", "price", "prices", "cost", "costs", "spend", "afford", "money", "expensive", "cheap", "much"),
    "airline": ("airline", "airlines", "carrier", "carriers", "fly with"),
    "dates": ("date", "dates", "day", "days", "when", "travel window", "depart", "departure", "leave"),
    "priority": ("priority", "priorities", "matters most", "most important", "prefer most", "rank"),
    "events": ("event", "events", "festival", "season", "avoid"),
    "route": ("origin", "destination", "from where", "where to", "route"),
}
_PATTERNS = {slot: re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.I) for slot, words in SYNONYMS.items()}
FLIGHT_ID = re.compile(r"\b([A-Z]{2}\d{4,6})\b")
HOLD_ID = re.compile(r"\b(H\d+)\b")
RETRIEVABLE = {"events"}


class Traveller:
    """Answers questions from the hidden and given slots; records what was asked and confirmed."""

    def __init__(self, truth: dict[str, Any], events: list[dict[str, Any]], holds: dict[str, dict[str, Any]]):
        self.truth = truth
        self.events = events
        self._holds = holds  # the world's holds, to resolve hold ids named in confirmations

    def ask(self, question: str) -> str:
        flight = self._named_flight(question)
        if flight is not None:
            ok = flight in self.truth["acceptable"]
            self.events.append({"type": "confirm", "object": flight, "answer": "yes" if ok else "no"})
            return "Yes, go ahead." if ok else "No."
        slots = [s for s, pat in _PATTERNS.items() if pat.search(question)]
        self.events.append({"type": "ask", "slots": slots, "question": question[:300]})
        if not slots:
            return "I'm not sure what you mean."
        return " ".join(self._answer(s) for s in slots)

    def _named_flight(self, question: str) -> str | None:
        m = FLIGHT_ID.search(question)
        if m:
            return m.group(1)
        m = HOLD_ID.search(question)
        if m and m.group(1) in self._holds:
            return self._holds[m.group(1)]["flight"]
        return None

    def _answer(self, slot: str) -> str:
        t = self.truth
        if slot == "budget":
            return f"My budget is at most ${t['budget']}."
        if slot == "airline":
            return f"I prefer to fly with {t['airline']}." if t["airline"] else "Any airline is fine."
        if slot == "dates":
            return f"I can fly on {' or '.join(t['candidate_dates'])}."
        if slot == "priority" and not t["priority"]:
            return "As many of my wishes as possible; then the lowest price."
        if slot == "priority":
            return "What matters most: " + " > ".join(t["priority"]) + "; then the lowest price."
        if slot == "events":
            return "I don't know the event dates; please check them."
        return f"I'm flying from {t['origin']} to {t['destination']}."
