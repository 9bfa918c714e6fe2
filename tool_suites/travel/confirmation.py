"""The reader's confirmation rule (:mod:`.reading`, rule 1): whether a question asks the traveller to approve
paying for one flight, and which — the flight its asking part names, else the held seat it speaks of, else the
flight named last before it."""

from __future__ import annotations

import re

from .lexicon import (
    ACCEPT,
    ADDING,
    AIRLINE,
    AMOUNT_ASKED,
    ANY_FLIGHT,
    COMMIT_WORDS,
    EXTRAS,
    HOLD_ID,
    HOLD_WORDS,
    MAY_WE,
    OTHER_ACTS,
    TIMES_OF_DAY,
    stem,
    stems,
)
from .phrases import (
    amount_to_pay,
    contains,
    goes_over,
    holds_still,
    lets_go,
    names_flight_id,
    paid_for_a_wish,
    pays_more,
    the_hold,
)

CONFIRM_REQUEST = re.compile(r"\s*(?:please\s+)?confirm\b", re.I)
YES_OR_NO = re.compile(r"\byes\s+or\s+no\b", re.I)
#: what an "is it OK?" judges when the asking part names it: the flight's time, not the flight
TIME_JUDGED = TIMES_OF_DAY | {stem(w) for w in ("early", "earlier", "late", "later", "start", "time", "hour")}


class ConfirmationRules:
    """Mixed into :class:`.reading.Reader`: needs the world's flights (``flights``, by normalised id, and the
    pattern ``_flight`` naming them) and its holds (``holds``)."""

    flights: dict[str, str]
    holds: dict[str, dict]
    _airlines: list[tuple[str, ...]]
    _flight: re.Pattern[str] | None

    def _confirmed(self, question: str, sentences: list[str]) -> str | None:
        # a flight or hold named anywhere is confirmed only by a question that commits (book, pay, ticket,
        # go ahead …): "EG55120 is $276. Is that affordable?" asks the budget; the one the asking part
        # names wins ("H2 was released. Shall I book EG55120 instead?")
        # "Do you want flight AS12301? yes or no?", "AS12301 - yes or no?" offer no choice
        question = YES_OR_NO.sub(" ", question)
        # (and a request to confirm, however it ends: "Please confirm AS12301 so I can pay — and would you like a
        # window seat?")
        asking = YES_OR_NO.sub(" ", " ".join(x for x in sentences if x.rstrip().endswith("?") or CONFIRM_REQUEST.match(
            x))) or question
        if AMOUNT_ASKED.search(asking) and not MAY_WE.search(asking):
            return None  # "To choose between DW77701 and CL12311, how high are you willing to go?"
        asked, whole = stems(asking), stems(question)
        said = asked if len(asked) > 3 else whole  # "… before I book bo45612. Shall I?"
        commits = self._commits(said)
        committing = commits or contains(said, ("one", "you", stem("want"))) or any(  # "Is that the flight you want?"
            said[k + 1:k + 6] == [that, "the", stem("flight"), "you", stem("want")] and said[k + 6:k + 7] not in (
                ["me"], ["us"], ["to"]) for k, w in enumerate(said) if w == "is" for that in ("that", "this"))
        # a flight the asking part names itself, with no choice in it: "Do you want CL12311?", a bare "AS12301?"
        # (not a request to do something else with it: "Do you want me to keep hold H1 active while I check?")
        # ("… want me to also release H1?": an adverb before the verb)
        # ("Do you want to keep H1 while I keep searching?")
        other_act = any(w == stem("want") and (said[i + 1:i + 3] in (["me", "to"], ["us", "to"]) and set(
            [v for v in said[i + 3:i + 5] if v not in ("also", "just", "now", "first")][:1]) & OTHER_ACTS
                        or said[i + 1:i + 2] == ["to"] and set(said[i + 2:i + 3]) & OTHER_ACTS)
                        for i, w in enumerate(said))
        other_act = other_act and stem("take") not in said  # not "… want me to keep it simple and take AS12301?"
        if not committing and self._named(asking) is not None and "or" not in said and not other_act:
            committing = set(said) & {stem("want"), stem("take")} or len(said) <= 3
        # a flight named before a bare "Do you want it?" ("I held AS12301 for you, it's $280. Do you want it?")
        want = stem("want")
        wants_it = said[-2:] == [want, "it"] or said[-3:] in ([want, "this", "one"], [want, "that", "one"])
        # (not an extra offered: "AS12301 has a meal for $12. Do you want it?")
        if (not committing and wants_it and len(said) <= 5 and not set(whole) & EXTRAS
                and self._named(question, last=True) is not None):
            committing = True
        # (a question about what was done or what something is called: "Did you already pay for H2?", "What is the
        # hold id for your booking?")
        paid_already = any(asked[k:k + 2] == ["did", "you"] and set(asked[k + 2:k + 4]) & {
            stem("pay"), stem("book"), stem("already"), stem("buy")} for k in range(len(asked)))
        if paid_already or set(asked) & {"id", stem("reference"), "code"} and asked[:1] in (["what"], ["which"]):
            return None
        # (a time of day judged, not the flight: "AS12301 departs at 06:10. Is such an early start OK for you?")
        if commits and commits <= ACCEPT and set(asked) & TIME_JUDGED:
            return None
        # (an extra added to the booking: "Do you need checked baggage added to this booking?", "Would you like a
        # meal added if I end up booking a flight like this?")
        if set(asked) & EXTRAS and set(asked) & ADDING and not commits & {stem("pay"), stem("confirm")}:
            return None
        # (or another act than paying: "Is it OK if I keep hold H1 active while I look for other options?")
        if commits and commits <= ACCEPT and any(a == "if" and b in ("i", "we") and c in OTHER_ACTS
                                                 for a, b, c in zip(asked, asked[1:], asked[2:])):
            return None
        # (a release is no payment, however okay: "Is it okay if I release hold H1 now?")
        if not committing or holds_still(said) or lets_go(said) and not commits - ACCEPT:
            return None  # "Do you want me to release hold H1 and search again?"
        # the flight the asking part names; else the held seat it speaks of; else the flight named last before it
        # ("Your earlier hold on BO45612 was released. The seat I'm holding now is on AS12301. May I book it?")
        named = self._named(asking)
        if named is not None:
            return named
        held = self._held_seat(whole)
        if held is not None and the_hold(asked):  # "H2 on BO45612 was released. Shall I pay for the held seat?"
            return held
        return self._named(question, last=True) or held

    def _commits(self, words: list[str]) -> set[str]:
        """The words that commit to a booking (book, pay, go ahead, okay …), less those that only weigh one: how
        much to pay ("To choose between DW77701 and CL12311 … what is the most you are willing to pay?"), an amount
        paid for a wish ("Would you pay $340 to fly Borealis, or go with a cheaper airline?"), paying in a choice,
        going with a kind of flight, going over the budget."""
        return {w for i, w in enumerate(words) if w in COMMIT_WORDS | ACCEPT and not amount_to_pay(words, i)
                and not paid_for_a_wish(words, i) and not self._goes_with_a_kind(words, i)
                and not self._pays_in_a_choice(words, i)
                and not goes_over(words, i) and not (w == "go" and stem("let") in words[max(0, i - 5):i])
                and not (pays_more(words, i) and "than" in words)  # "Would a day later be better than paying more?"
                and not (w == "go" and words[i + 1:i + 2] in ([stem("further")], ["on"]))  # "before we go on"
                # "a loyalty number I should attach to the reservation", "added to this booking": the noun
                and not (w in (stem("book"), stem("reservation")) and words[max(0, i - 2):i] in (
                    ["to", "the"], ["to", "this"], ["to", stem("your")]))}

    def _pays_in_a_choice(self, words: list[str], i: int) -> bool:
        """Whether ``words[i]`` is the traveller paying in a choice between wishes: "keep Borealis and pay more,
        or …?", "would you rather keep Borealis and pay $340, or stay within budget?" (not "shall I pay …, or
        wait?")."""
        if words[i] != stem("pay") or "or" not in words or i and words[i - 1] in ("i", "we"):
            return False
        if words[i + 1:i + 2] == ["for"]:
            return False  # "Would you prefer to pay for H1 now, or …?" pays for it
        return pays_more(words, i) or bool({stem("rather"), stem("prefer")} & set(words))

    def _goes_with_a_kind(self, words: list[str], i: int) -> bool:
        """Whether ``words[i]`` is "go with" a kind of flight rather than one flight ("or go with a cheaper
        airline?", "go with another carrier"): a choice to weigh, not a booking to approve."""
        if words[i] != "go" or words[i + 1:i + 2] != ["with"]:
            return False
        rest = [w for w in words[i + 2:i + 4] if w not in ("a", "an", "the")]
        if names_flight_id(words[i + 2:]):
            return False  # "go with Borealis BO45612", "… the other Aster Air flight, AS12310?" name the flight
        kinds = AIRLINE | {stem("another"), stem("cheaper"), stem("different"), stem("other")}
        return bool(rest) and (rest[0] in kinds or any(words[i + 2:i + 2 + len(a)] == list(a) for a in self._airlines))

    def _held_seat(self, words: list[str]) -> str | None:
        """The flight of the one active hold when the question proposes to pay for "the held seat" (not to let
        it go)."""
        active = [h for h in self.holds.values() if h.get("status", "active") == "active"]
        ws = set(words)
        if len(active) == 1 and ws & HOLD_WORDS and ws & COMMIT_WORDS - HOLD_WORDS and not lets_go(words):
            return active[0]["flight"]
        return None

    def _named(self, text: str, last: bool = False) -> str | None:
        """The flight a text names first (``last``: last): one of the world's, a made-up id, or a hold's."""
        def found(pattern: re.Pattern[str] | None) -> re.Match[str] | None:
            # (not a flight ruled out: "Note: AS12310, not AS12301 — …")
            matches = [m for m in (pattern.finditer(text) if pattern is not None else ())
                       if not re.search(r"\bnot\s+(?:the\s+)?$", text[:m.start()], re.I)]
            return (matches[-1] if last else matches[0]) if matches else None

        m = found(self._flight)
        if m:
            return self.flights[re.sub(r"[\s-]", "", m.group(1)).upper()]
        m = found(ANY_FLIGHT)
        if m:
            return m.group(1)
        m = found(HOLD_ID)
        if m and m.group(1).upper() in self.holds:
            return self.holds[m.group(1).upper()]["flight"]
        return None
