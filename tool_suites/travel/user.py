"""The deterministic rule-based traveller behind ``ask_user``.

How a question is read — a confirmation of a flight, the slots it asks about, or nothing — is
:mod:`.reading` (paraphrases, not only keywords; measured on a committed corpus). Then:

1. **Confirmation** (a question that commits to a flight or hold it names, or to the one held seat): ``yes`` when that
   flight is acceptable under the *hidden* constraints (a free flight on the traveller's dates that
   meets every slot the prompt did not state) and a reason-free ``no`` otherwise. The traveller
   does not re-check what the prompt stated or the priority order: that is the agent's job, judged
   by ``success`` and ``priority``. Recorded as a ``confirm`` event.
2. **Slot question**: every slot it asks about is answered with its value, and nothing else.
   Questions about slots the task already stated (route, priority, given budget...) are answered
   but count as over-asking; ``events`` is retrievable with ``get_city_events`` and is answered
   with "please check". Recorded as an ``ask`` event with the slots it matched.
3. Anything else gets "I'm not sure what you mean." (an ``ask`` event with no slot: counted per
   episode as ``unanswered_questions``, so a report shows when the simulator, not the model, failed).
"""

from __future__ import annotations

from typing import Any

from .generator import AIRLINES
from .reading import Reader

RETRIEVABLE = {"events"}

#: The version of how the traveller reads a question (:mod:`.reading` and the modules it uses). Part of every
#: travel run's identity (``TravelSuite.behaviour_version``): bump it with any change in a reading, so that
#: a run folder made before is not resumed with episodes the old reader answered.
#: tests/suites/test_traveller_reading.py holds the digest of this version's readings of the corpus and fails
#: when they change. 1: after issue 27's round 18 and its review; 2: after round 19; 3: after round 20; 4: after
#: round 21; 5: after round 22; 6: after round 23; 7: after round 24; 8: after round 25; 9: after round 26;
#: 10: after round 27; 11: after round 28; 12: after round 29; 13: after rounds 30 and 31; 14: after rounds 32 and
#: 33; 15: after a review of rounds 19–33's rules by 90 probes; 16: after rounds 34 and 35; 17: after round 36;
#: 18: after round 37; 19: after round 38; 20: after round 39; 21: after round 40; 22: after round 41;
#: 23: after round 42; 24: after round 43; 25: after round 44; 26: one city named asks the route only in a check
#: of the trip (rounds 4–45 read alike; round 44 showed single cities as the first cause of misread questions
#: about nothing); 27: after round 46; 28: after round 47; 29: after rounds 48 and 49, with the gate on questions
#: about nothing (.none_gate, trained on the corpus through round 49); 30: after rounds 50 and 51 (the gate
#: retrained through round 51); 31: after rounds 52 and 53 (the gate through round 53); 32: after rounds 54
#: and 55 (the gate through round 55); 33: after rounds 56 and 57 (the gate through round 57).
READER_VERSION = 33


class Traveller:
    """Answers questions from the hidden and given slots; records what was asked and confirmed."""

    def __init__(self, truth: dict[str, Any], events: list[dict[str, Any]], holds: dict[str, dict[str, Any]],
                 flights: list[dict[str, Any]] | None = None):
        self.truth = truth
        self.events = events
        flights = flights or []
        # the world's holds (a live dict) resolve hold ids and "the held seat" in confirmations
        self.reader = Reader([f["flight_id"] for f in flights], holds,
                             airlines=sorted(set(AIRLINES.values()) | {f["airline"] for f in flights}),
                             cities=[truth["origin"], truth["destination"]])

    def read(self, question: str):
        """How this traveller reads a question (:class:`.reading.Reading`), nothing recorded."""
        return self.reader.read(question)

    def ask(self, question: str) -> str:
        reading = self.read(question)
        if reading.kind == "confirm":
            ok = reading.flight in self.truth["acceptable"]
            self.events.append({"type": "confirm", "object": reading.flight, "answer": "yes" if ok else "no"})
            return "Yes, go ahead." if ok else "No."
        slots = reading.slots
        self.events.append({"type": "ask", "slots": slots, "question": question[:300]})
        if not slots:
            return "I'm not sure what you mean."
        return " ".join(self._answer(s) for s in slots)

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
