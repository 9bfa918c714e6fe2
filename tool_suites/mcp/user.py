"""The deterministic user behind ``ask_user`` on MCP topologies.

A question is read in this order:

1. **Confirmation** — it says ``confirm``, ``go ahead``, ``proceed``, ``ok to`` or ``okay to``: the
   answer is ``Yes, go ahead.`` when it names (contains) one of the task's acceptable objects —
   what its gold plan's irreversible calls act on, e.g. a commit message — and ``No.`` otherwise.
   Recorded as a ``confirm`` event (the object is the named acceptable one, else the first quoted
   text of the question, else empty).
2. **Slot question** — every hidden slot one of whose keywords appears (whole words,
   case-insensitive) is answered, and nothing else. Recorded as an ``ask`` event with those slots.
3. Anything else gets "I'm not sure what you mean." (an ``ask`` event with no slot).
"""

from __future__ import annotations

import re
from typing import Any

CONFIRM = re.compile(r"\b(confirm|go ahead|proceed|ok to|okay to)\b", re.I)
QUOTED = re.compile(r"['\"\u2018\u201c`]([^'\"\u2019\u201d`]{1,300})['\"\u2019\u201d`]")


class User:
    """Answers from the task's hidden slots; confirms only acceptable objects."""

    def __init__(self, slots: dict[str, dict[str, Any]], acceptable: list[str], events: list[dict[str, Any]]):
        self.slots, self.events = slots, events
        self.acceptable = sorted({a for a in acceptable if a}, key=len, reverse=True)  # longest name first
        self._patterns = {
            name: re.compile(r"\b(" + "|".join(re.escape(k) for k in slot["keywords"]) + r")\b", re.I)
            for name, slot in slots.items()
        }

    def ask(self, question: str) -> str:
        if CONFIRM.search(question):
            lowered = question.lower()
            named = next((a for a in self.acceptable if a.lower() in lowered), None)
            quoted = QUOTED.search(question)
            obj = named if named is not None else (quoted.group(1) if quoted else "")
            self.events.append({"type": "confirm", "object": obj, "answer": "yes" if named is not None else "no"})
            return "Yes, go ahead." if named is not None else "No."
        asked = [name for name, pat in self._patterns.items() if pat.search(question)]
        self.events.append({"type": "ask", "slots": asked, "question": question[:300]})
        if not asked:
            return "I'm not sure what you mean."
        return " ".join(self.slots[s].get("answer") or str(self.slots[s]["value"]) for s in asked)
