"""The reader's rules about the priority order (:mod:`.reading`, rule 2): whether a question asks how the
traveller's wishes rank against each other, and which wishes a stretch of text names."""

from __future__ import annotations

import re

from .airlines import AirlineRules
from .lexicon import (
    AIRLINE,
    BETTER,
    BUDGET,
    CHOICE,
    COMPARATIVE,
    CONTRAST,
    DATES,
    DETAILS_REQUEST,
    DROP,
    DROP_OR_KEEP,
    ELSE_WORDS,
    EVENT_CLASH,
    EVENTS,
    EXCEED,
    EXTRAS,
    FIRM,
    FLEXIBLE,
    HOLD_WORDS,
    IMPORTANT,
    INDIRECT,
    LEAD_IN,
    LESS_MORE,
    LUGGAGE,
    MUST_PAIRS,
    NOTIFY,
    OUTRANK,
    PAID_FOR,
    PART,
    PRIORITISE,
    PRIORITY,
    PRIORITY_PAIRS,
    PURPOSE,
    QUESTION_START,
    SAVING,
    SEATING,
    SENTENCE,
    SWITCH,
    TRADE_OFF,
    WHICH_PRONOUN,
    WISH_NOUNS,
    stem,
    stems,
)
from .phrases import (
    adjectival_prefer,
    contains,
    goes_over,
    leaves,
    numbered_items,
    ordinal,
    paid_for_a_wish,
    pays_more,
)


class PriorityRules(AirlineRules):
    """Mixed into :class:`.reading.Reader`: the priority rules need the world's airlines (``_airlines``, each a
    tuple of stems, read by :class:`.airlines.AirlineRules`); the two that split a question into its slots and its
    priority (``_listed``, ``_slots_then_priority``) also read its parts with the reader's ``read`` and
    ``_clause_slots``."""

    _airlines: list[tuple[str, ...]]

    def _mentions(self, words: list[str]) -> set[str]:
        """The wishes a stretch of text names (for ``rather X or Y``)."""
        dated = set(words) & DATES - {stem("leave"), stem("depart")} or leaves(words) or ordinal(words)
        # paying more names the budget: "keep the airline and pay a bit more, or save money with another carrier?"
        more = any(pays_more(words, i, reach=4) for i in range(len(words)))
        return {s for s, cues in (("budget", BUDGET), ("airline", AIRLINE)) if set(words) & cues or s == "budget"
                and more} | (
            {"airline"} if self._names_airline(words) else set()) | ({"dates"} if dated else set())

    def _about_priority(self, words: list[str]) -> bool:
        words = adjectival_prefer(words)  # "your preferred airline" chooses nothing
        ws = set(words)
        extras = ws & (EXTRAS | SEATING)  # paying more for a bag or legroom trades no wish
        cues = ws & PRIORITY
        if ws & EVENTS:
            cues -= EVENT_CLASH
        if ws & LUGGAGE:  # "how much does your cabin bag weigh?"
            cues -= {stem("weigh")}
        if cues and cues <= PRIORITISE and len(self._mentions(words)) == 1:
            return False
        if cues and cues <= IMPORTANT and not ws & COMPARATIVE and len(self._mentions(words)) == 1:
            return False  # "is it important to you that it's an Aster Air flight?" asks that wish
        musts = {p for p in zip(words, words[1:]) if p in PRIORITY_PAIRS}
        if any(a == stem("give") and b in ("it", "that", "them") and c == "up"
               for a, b, c in zip(words, words[1:], words[2:])):
            musts.add((stem("give"), "up"))  # "would you give it up for a cheaper fare?"
        if not cues and musts and musts <= MUST_PAIRS and len(self._mentions(words)) == 1:
            return False  # "by what date do you absolutely need to have landed?" asks that wish
        if contains(words, (stem("let"), "go")) and (ws & WISH_NOUNS or ws & {"first", "which", "what"}
                                                      and not ws & HOLD_WORDS):
            return True  # "one wish you'd happily let go of", "what would you let go of first?"
        # "Is that acceptable, or is Borealis a must even if it costs more?": a wish kept at a higher price
        if contains(words, ("even", "if")) and ws & {"more", stem("higher")} and ws & (BUDGET | {stem("cost")}) and (
                self._mentions(words) - {"budget"}):
            return True
        if "between" in ws and "which" in ws and len(self._mentions(words)) >= 2:
            return True  # "Between budget and airline, which comes next?"
        if ws & OUTRANK and ws & ELSE_WORDS and stem("else") in ws:
            return True  # "I assume the date trumps everything else?"
        # "you'd sooner pay a bit more than move your date", "would flying a day later be better than paying more?"
        if ws & {stem("sooner"), stem("better"), stem("rather")} and "than" in words:
            i = words.index("than")
            left, right = self._mentions(words[:i]), self._mentions(words[i + 1:])
            if left and right and not left & right:
                return True
        # a wish noun, not the verb its stem shares ("your preferences", not "which carrier do you prefer")
        nouns = {w for i, w in enumerate(words) if w in WISH_NOUNS
                 and not (w == stem("prefer") and i and words[i - 1] in ("you", "i", "we", "do", "would", "d", "ll"))}
        if (cues or musts or ws & FLEXIBLE and ws & FIRM
                or ws & FLEXIBLE and nouns):
            return True
        pairs = list(zip(words, words[1:]))
        bank = ws & DROP == {stem("break")} and stem("budget") in ws  # "not break the bank: what would break it?"
        if ws & DROP and ws & {"which", "what"} and not ws & HOLD_WORDS and not bank:  # "which one should I drop?"
            return True
        if "which" in ws and any(a == "which" and (b in WISH_NOUNS or b == "of" and words[i + 2:i + 4]
                                                   and set(words[i + 2:i + 4]) & WISH_NOUNS)
                                 for i, (a, b) in enumerate(pairs)):
            return True  # "which preference...", "which of your rules..."
        which_pronoun = "which" in ws and any(a == "which" and b in WHICH_PRONOUN for a, b in pairs)
        if ws & FLEXIBLE and (which_pronoun or ws & {"most", "least"} and not self._mentions(words)):
            return True  # "which one are you most willing to be flexible on?"
        if ws & OUTRANK and (which_pronoun or len(self._mentions(words)) >= 2):  # "should price beat the airline?"
            return True
        # one wish given up to keep another, or for a better another ("go over it for a better date?")
        for i, (a, b) in enumerate(pairs if ws & {"to", "for"} else ()):
            if a == "to" and b in PURPOSE or a == "for" and (b in BETTER or b == "a" and words[i + 2:i + 3]
                                                             and words[i + 2] in BETTER):
                left, right = self._mentions(words[:i]), self._mentions(words[i + 2:])
                if left and right and left != right:
                    return True
        # an amount paid for another wish: "Would you be willing to pay $40 more to fly on your preferred date?"
        if not extras and any(paid_for_a_wish(words, i) and self._mentions(words[words.index("to", i) + 1:])
                              - {"budget"} for i in range(len(words))):
            return True
        if stem("worth") in ws and ws & {"extra", "more"} and self._mentions(words) - {"budget"} and not extras:
            return True  # "Is flying with Borealis worth an extra $50 to you?"
        if any(self._exceeded_for(words, i) for i in range(len(words))):
            return True  # "would you be willing to exceed it slightly to fly with Borealis?"
        over = any(w in (stem("go"), stem("going")) and words[i + 1:i + 2] == ["over"]
                   and set(words[i + 2:i + 5]) & BUDGET for i, w in enumerate(words))
        if over and len(self._mentions(words)) >= 2:
            return True  # "would you accept going over your budget in order to fly on your preferred date?"
        # "a flight about $40 over your budget if it is on your preferred date?": the fare over the limit, for another
        beyond = any(w in ("over", "abov", "beyond") and set(words[i + 1:i + 4]) & BUDGET for i, w in enumerate(words))
        if beyond and "if" in ws and self._mentions(words[words.index("if") + 1:]) - {"budget"}:
            return True
        weighing = {stem("matter"), stem("strict"), stem("firm"), stem("flexible"), "must"} | WISH_NOUNS | IMPORTANT
        # (a "than" before an amount compares amounts: "Must the fare stay lower than $400, and …?")
        amount = ("$", "€", "£")
        than = any(w == "than" and not (words[k + 1:k + 2] and (words[k + 1] in amount or words[k + 1].isdigit()))
                   for k, w in enumerate(words))
        if ws & weighing and (stem("compared") in ws or than) and len(self._mentions(words)) >= 2:
            return True  # "how much does the date matter compared with price?"
        if "if" in ws and ws & SAVING:  # "would you fly a day later if it saves you $50?"
            i = words.index("if")
            left, right = self._mentions(words[:i]), self._mentions(words[i:])
            if left - {"budget"} or len(left | right) >= 2:  # "… pay $50 more if it saves you a day?"
                return True
        mentioned = len(self._mentions(words))
        if mentioned >= 2 and "if" in ws and ws & {stem("meant"), stem("means")}:
            return True  # "accept a different airline if it meant flying on your date?"
        if mentioned >= 2 and ws & {"if", stem("suppose")} and ws & TRADE_OFF:
            return True  # "if the cheapest flight were on a different airline, would you still take it?"
        if "or" in ws and ws & {stem("prefer"), stem("rather"), stem("take"), stem("stay"), stem("stick")}:  # packages
            i = words.index("or")
            festival = bool(ws & EVENTS)  # "avoid it" is the event's only when one is named
            left, right = self._wishes(words[:i], festival), self._wishes(words[i + 1:], festival)
            if len(left) >= 2 and len(right) >= 2:
                return True  # "a cheaper fare on a worse date, or the right date at a higher price?"
            # "Do you prefer avoiding the festival or staying under budget?", and a wish kept against another: "Would
            # you prefer to stay within budget or fly on the earlier date?"
            choosing = ws & {stem("prefer"), stem("rather")}
            if choosing and left and right and not left & right and (
                    "events" in left | right or ws & {stem("stay"), stem("keep"), stem("stick")}):
                return True
        if "or" in ws and ws & FLEXIBLE and ws & {"more", "less"}:  # "Is the date or the budget more flexible?"
            i = words.index("or")
            left, right = self._mentions(words[:i]), self._mentions(words[i + 1:])
            if left and right and not left & right:
                return True
        # a higher fare accepted for another wish: "Would you accept a slightly higher price to fly on your date?"
        for t, w in enumerate(words[:-1]):
            if w == "to" and words[t + 1] in PAID_FOR and self._mentions(words[t + 1:]) - {"budget"} and any(
                    a in (stem("higher"), stem("pricier")) and b in BUDGET for a, b in zip(words[:t], words[1:t + 1])):
                return True
        if which_pronoun and mentioned >= 2 and (ws & (CHOICE | {stem("prefer")}) or ws & LESS_MORE and "or" in ws):
            return True  # "…on the wrong airline: which should I prefer?", "which would bother you less: X, or Y?"
        if mentioned >= 2:  # a choice between two wishes
            # "rather X or Y", "favour X over Y", "prefer X over Y", "over budget: still pick it?"
            # (a verb of choosing just before the "or" is one of the alternatives and chooses nothing: "your
            # spending limit, and any airline you favour or want to avoid?")
            choice = {w for k, w in enumerate(words) if w in CHOICE and words[k + 1:k + 2] != ["or"]}
            return bool(ws & CONTRAST and choice
                        or "over" in ws and ws & (CHOICE | {stem("prefer"), stem("take")}))
        return False

    def _listed(self, asking: str) -> list[str]:
        """The slots and the priority a numbered list asks, each item read on its own ("Please provide: (1) your
        preferred airline, (2) the dates you can fly, (3) which of date, budget and airline matters most"); [] when
        there is no list, its lead asks the priority ("rank these: 1) the date, 2) the price") or no item but the
        priority's asks a slot."""
        items = numbered_items(asking)
        if not items or self._about_priority(stems(items[0])):
            return []
        slots: list[str] = []
        for item in items[1:]:
            reading = self.read_by_rules(item)
            slots += [s for s in reading.slots if s not in slots and reading.kind == "ask"]
        if "priority" not in slots or len(slots) < 2:
            return []
        return [s for s in slots if s != "priority"] + ["priority"]

    def _slots_then_priority(self, asking: str, whole: bool) -> list[str]:
        """The slots of a question that asks them first and then the priority, each on its own ("Are you
        flexible on the date, and would you rather move it than pay more?"); [] for any other question.
        ``whole``: whether the question as a whole asks the priority."""
        # "Hello! I'd be glad to help. Please share your …, and which of these matters most …": the greeting
        # and the statements before the request ask nothing
        opening = SENTENCE.split(asking)
        while len(opening) > 1 and not self._clause_slots(*[stems(opening[0])] * 2) and not (
                QUESTION_START.match(opening[0]) or INDIRECT.match(opening[0])):
            opening = opening[1:]
        asking = " ".join(opening)
        # "A couple of quick questions: what's your budget, …, and if …, what matters most?"
        lead = LEAD_IN.match(asking)
        needs = lead and re.search(r"\b(?:need|provide|share|know)\W*$", lead.group(0), re.I)  # "… I need: your …"
        if lead and (QUESTION_START.match(asking[lead.end():]) or needs) and not self._clause_slots(
                *[stems(lead.group(0))] * 2):
            asking = asking[lead.end():]
        request = DETAILS_REQUEST.match(asking) or needs  # "Please provide the following details: travel date, …"
        # "Please let me know your budget, and …"
        if not (QUESTION_START.match(asking) or INDIRECT.match(asking) or request):
            return []
        cues = PRIORITY | CHOICE | SWITCH | TRADE_OFF | {stem("prefer")}  # "would you still want it if …?"
        # the last split first: "Which airline do you prefer, and which days can you fly? And if the two conflict,
        # which should win?" asks both slots before the priority
        for m in reversed(list(re.finditer(r"\band\b|;|\?|\.(?=\s)", asking, re.I))):
            head, rest = asking[:m.start()], asking[m.end():]
            head_words, rest_words = stems(head), stems(rest)
            # each side a question of its own: the head about "you", the rest opening like a question
            if (not rest_words or set(head_words) & (PRIORITY | CHOICE) or self._about_priority(head_words)
                    or not ({"you", stem("your")} & set(head_words) or request or QUESTION_START.match(head))
                    or set(head_words) & NOTIFY
                    or not (QUESTION_START.match(rest) or INDIRECT.match(rest)  # "…, and tell me whether …"
                            or re.match(r"\W*(?:(?:also|and|so|but)\W+)?(?:if|in case)\b", rest, re.I)
                            # "…, and the order of importance of these if not all can be met."
                            or re.match(r"\W*(?:the|your)\s+(?:order|ranking|priorit)", rest, re.I))):
                continue
            # the rest asks the priority on its own, or with the wish the head named ("…rather move it than pay?")
            if not (self._about_priority(rest_words) or self._switched(rest_words) or whole and set(rest_words) & cues):
                continue
            slots: list[str] = []
            for clause in PART.split(head):
                slots += [s for s in self._clause_slots(stems(clause), head_words) if s not in slots]
            return slots
        return []

    def _exceeded_for(self, words: list[str], i: int) -> bool:
        """Whether ``words[i]`` exceeds the budget for another wish: "exceed it slightly to fly with Borealis",
        "go over it to keep the 12th" (not "stretch your budget to $320")."""
        if not (words[i] in EXCEED or goes_over(words, i)):
            return False
        to = next((k for k in range(i + 1, min(len(words) - 1, i + 9)) if words[k] == "to"), None)
        if to is None or words[to + 1] not in PAID_FOR | {stem("avoid")}:
            return False
        after = words[to + 1:]  # "exceed your budget to avoid the festival" trades it for the event
        return bool(self._mentions(after) - {"budget"} or set(after) & EVENTS)

    def _wishes(self, words: list[str], festival: bool) -> set[str]:
        """The wishes a stretch of text names, the event to avoid among them ("avoid it and pay more", when the
        question names a ``festival``)."""
        avoided = festival and bool({stem("avoid"), stem("during")} & set(words))  # (or "fly during it")
        return self._mentions(words) | ({"events"} if set(words) & EVENTS or avoided else set())

    def _raises_budget(self, words: list[str]) -> bool:
        """Whether the words raise the budget: "go over budget", "stretch the budget", "increase your budget",
        "pay more"."""
        ws = set(words)
        over = any(goes_over(words, k) or w in EXCEED | {stem("increase"), stem("raise")} for k, w in enumerate(words))
        return bool(over and ws & BUDGET) or any(pays_more(words, k) for k in range(len(words)))

    def _switched(self, words: list[str]) -> bool:
        """One sentence's choice by a weak verb (:data:`SWITCH`): a different wish on each side of its "or"
        ("would you accept the later date, or switch airlines?", "pay extra or move the date?")."""
        if "or" not in words:
            return False
        i = words.index("or")
        if set(words) & SWITCH:
            left, right = self._mentions(words[:i]), self._mentions(words[i + 1:])
            if left and right and not left & right:
                return True
        # over the budget, or another wish given up: "Should I go over budget, or book a flight during the festival?"
        # (or "Should I stretch the budget, or book a cheaper airline?", "you want pay more or other airline?")
        left, right = words[:i], words[i + 1:]
        if (self._raises_budget(left) and self._wishes(right, festival=False) - {"budget"}
                or self._raises_budget(right) and self._mentions(left) - {"budget"}):
            return True
        # a named airline or a cheaper one: "Do you want Borealis or the cheaper one?"
        cheaper = {stem("cheaper"), stem("cheapest"), stem("lower")}
        if self._names_airline(left) and set(right) & cheaper or set(left) & cheaper and self._names_airline(right):
            return True
        # the nearest verb of giving up or keeping before the "or": "If I can't find Aster Air on your dates,
        # should I drop the airline or the date?"
        # (or change: "If Borealis is sold out, should I change the date or the airline?")
        verb = max((j for j, w in enumerate(words[:i]) if w in DROP_OR_KEEP | SWITCH), default=None)
        if verb is None:
            return False
        left, right = self._mentions(words[verb:i]), self._mentions(words[i + 1:])
        return bool(left and right and not left & right)

