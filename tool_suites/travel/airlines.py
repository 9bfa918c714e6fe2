"""The reader's airline rules (:mod:`.reading`): whether a clause asks which airline, and whether an airline it
names is only a thing's ("the Aster Air app", "a bag on Borealis")."""

from __future__ import annotations

from .lexicon import AIRLINE, AIRLINE_CHOICE, AIRLINE_THINGS, FLYING, HOLD_WORDS, PLANES, stem
from .phrases import contains

ALLIANCES = {stem(w) for w in ("alliance", "oneworld", "skyteam")}
LOYALTY = {stem(w) for w in ("membership", "memberships", "program", "programme", "miles", "points", "loyalty")}
#: who a traveller flies with when it is no airline
COMPANIONS = {stem(w) for w in ("infant", "infants", "baby", "child", "children", "kid", "kids", "pet", "dog", "cat",
                                "family", "partner", "wife", "husband", "friend", "friends", "colleague",
                                "colleagues", "someone", "anyone", "companion", "group")}


class AirlineRules:
    """Mixed into :class:`.reading.Reader`: needs the world's airlines (``_airlines``, each a tuple of stems)."""

    _airlines: list[tuple[str, ...]]

    def _asks_airline(self, words: list[str], whole: set[str]) -> bool:
        """Whether a clause asks which airline: an airline word or name that no thing owns (or one chosen),
        "fly with", "with whom", "who flies", "whose planes"; ``whole``: the stems of the whole question."""
        ws, pairs = set(words), set(zip(words, words[1:], strict=False))
        # "company" is an airline only next to flying ("which company operates the flight"), not "for your company"
        airline_cues = ws & AIRLINE if ws & FLYING else ws & AIRLINE - {stem("company")}
        named = self._names_airline(words)
        # a hold on one flight, named by its airline: "Do you want me to place a new hold on that Borealis flight?"
        if named and ws & HOLD_WORDS and self._the_airlines_flight(words):
            named = False
        # every airline named is a thing's ("the airline's cancellation policy", "the Aster Air app", "a bag on
        # Borealis", "a frequent flyer number for your preferred airline"): no airline is asked, unless chosen
        # ("which airline's app do you use?"; not "your preferred airline", nor wanting the thing itself)
        # an airline that is a thing's is chosen only by "which" ("which airline's app?"; not "does Egret Air's meal
        # service matter to you?", "do you want the Aster Air app?")
        choosing = ws & {"which"} if self._airline_thing(words) else ws & AIRLINE_CHOICE
        # "a member of any airline's frequent flyer program that I should take into account?" asks one (not "Are
        # you a member of any airline loyalty programme?")
        if contains(words, (stem("any"), stem("airline"))) and whole & {stem("account"), stem("consider"),
                                                                     stem("book")}:
            choosing = choosing | {"any"}
        things = {w for i, w in enumerate(words) if w in AIRLINE_THINGS and words[i + 1:i + 2] != ["of"]
                  and words[i - 1:i] != ["into"]}  # not "… that I should take into account?"
        # an alliance beside a loyalty scheme: "Do you have a Star Alliance or oneworld membership I should include?"
        if airline_cues and airline_cues <= ALLIANCES and whole & LOYALTY:
            things = things or LOYALTY
        if things and not choosing:  # not "a number of airlines in mind"
            airline_cues, named = set(), False
        # ("fly with" a companion is no airline: "Are you flying with an infant or a small child?")
        with_someone = any(a == stem("fly") and b == "with" and set(words[k + 2:k + 5]) & COMPANIONS
                           for k, (a, b) in enumerate(zip(words, words[1:], strict=False)))
        flies_with = (stem("fly"), "with") in pairs and not with_someone
        return bool(airline_cues or named or flies_with or ("with", "whom") in pairs
                    or ("who", stem("fly")) in pairs or "who" in ws and ws & {stem("fly"), stem("flying")}
                    or "whose" in ws and ws & PLANES)

    def _airline_thing(self, words: list[str]) -> bool:
        """Whether an airline the words name is a thing's: followed by it ("the Aster Air app", "the airline's
        policy") or after it and a preposition ("a bag on Borealis", "a number for your preferred airline")."""
        if not set(words) & AIRLINE_THINGS:
            return False
        spans = [(i, i) for i, w in enumerate(words) if w in AIRLINE] + self._name_spans(words)
        for start, end in spans:
            if set([w for w in words[end + 1:end + 4] if w != "s"][:2]) & AIRLINE_THINGS:
                return True
            j = start - 1
            while j >= 0 and words[j] in ("the", stem("your"), stem("prefer"), "this", "that", "their", "a"):
                j -= 1
            if j >= 1 and words[j] in ("on", "of", "for", "with", "at") and set(words[max(0, j - 3):j]) & (
                    AIRLINE_THINGS):
                return True
        return False

    def _the_airlines_flight(self, words: list[str]) -> bool:
        """Whether the words name one flight by its airline ("that Borealis flight", "the Aster Air one")."""
        return any(words[start - 1:start] in (["the"], ["that"], ["this"]) and words[end + 1:end + 2] in (
            [stem("flight")], ["one"], [stem("seat")]) for start, end in self._name_spans(words))

    def _name_spans(self, words: list[str]) -> list[tuple[int, int]]:
        """Where the words name one of the world's airlines: (first, last) index of each name."""
        return [(i, i + len(name) - 1) for name in self._airlines for i in range(len(words) - len(name) + 1)
                if tuple(words[i:i + len(name)]) == name]

    def _names_airline(self, words: list[str]) -> bool:
        return any(contains(words, name) for name in self._airlines)
