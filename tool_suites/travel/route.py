"""The reader's route rules (:mod:`.reading`): whether a clause asks where the trip goes from or to — a route word,
"where" or "which city" with a verb of travel, or the trip's cities named in a check of the trip — and not a place
something else happens in ("a hotel in Oslo", "your trip to Oslo", "when landing in Oslo")."""

from __future__ import annotations

from .lexicon import (
    EXTRAS,
    LODGING,
    PLACES,
    ROUTE,
    ROUTE_CHECK,
    SEATING,
    TIMES_OF_DAY,
    TRAVEL_VERBS,
    WEATHER,
    WHEN_NOT,
    stem,
)
from .phrases import contains, located, verb_place

#: what makes a city named something else than the trip's ends: a terminal, a layover, the trip's purpose
NOT_THE_TRIP = {stem(w) for w in ("terminal", "gate", "purpose", "layover", "layovers", "stopover", "connection",
                                  "connecting")}

#: a city the traveller lives in is the origin: "are you based in Lisbon?"
HOME = {stem(w) for w in ("based", "live", "currently", "home", "stay")}


class RouteRules:
    """Mixed into :class:`.reading.Reader`: needs the world's cities (``_cities``, as stems)."""

    _cities: set[str]

    def _asks_route(self, words: list[str], whole: set[str], *, dated: bool, weather: bool, leave_from: bool,
                    back: bool, asked: bool) -> bool:
        """Whether a clause asks the route; ``whole``: the stems of the whole question; ``dated``, ``weather``,
        ``leave_from``, ``back``: what the date rules found in it (a date asked, the weather, "which city do you
        leave from?", a return journey); ``asked``: whether it asks another slot already."""
        ws, pairs = set(words), set(zip(words, words[1:], strict=False))
        # a city the question is about, not one it mentions or places something in ("a hotel in Oslo")
        # ("the weather forecast in Oslo for when you arrive?"), or when the flight gets there, no date asked ("Is it
        # okay if the flight arrives late at night in Oslo?")
        # (or the way to the airport: "How do you plan to get to Lisbon airport?")
        elsewhere = ws & (LODGING | WEATHER | EXTRAS | SEATING) or weather or not dated and ws & (
            TIMES_OF_DAY | {stem("late"), stem("early"), stem("night"), stem("time"), stem("dark"), stem("daylight")}
        ) or contains(words, (stem("get"), "to")) and stem("airport") in ws  # "… before a certain time / dark?"
        # "where"/"which city" with a verb of travel; a place with only "to"/"from" is not enough
        # ("a taxi to the airport")
        where = ("where" in ws and (ws & TRAVEL_VERBS or len(words) == 1 and whole & TRAVEL_VERBS)
                 or ws & PLACES - verb_place(words) and ws & (TRAVEL_VERBS - {"to", "from"}) and not elsewhere
                 or any(a in ("which", "what") and b in PLACES for a, b in pairs))
        routed = any(w in ROUTE and not located(words, i) for i, w in enumerate(words))
        # (a city after "when landing", "when arriving" is where something happens: "… for the view when landing in
        # Oslo?")
        when = next((k for k, w in enumerate(words[:-1]) if w == "when" and words[k + 1] in WHEN_NOT), len(words))
        placed = {i for i in range(len(words)) if located(words, i) or elsewhere and words[i - 1:i] in (["from"],
                                                                                                         ["to"])}
        # (and "the Lisbon to Oslo flight" describes a flight: "… anyone else travelling with you on the Lisbon to
        # Oslo flight?")
        described = {k for i in range(1, len(words) - 3) if words[i - 1] in ("the", stem("your"), "this", "that")
                   and words[i] in self._cities and words[i + 1] == "to" and words[i + 2] in self._cities
                   and words[i + 3] == stem("flight") for k in (i, i + 2)}
        named = {w for i, w in enumerate(words) if w in self._cities and i < when and i not in described and not (
            i in placed and (elsewhere or not ws & (TRAVEL_VERBS - {"to", "from"} | HOME)))}
        # both ends of the trip, or one and another: "you're flying from Lisbon to Oslo, correct?", "Are you departing
        # from Lisbon or from another city?" (one city named is context: "your trip to Oslo", "land in Oslo before …")
        # (or one, in a question that is nothing but a check of the trip: "Are you flying to Oslo?", "Are you based
        # in Lisbon?", a fragment: "but to Taipei")
        checked = len(words) <= 3 or not set(words) - TRAVEL_VERBS - self._cities - ROUTE_CHECK - HOME
        named_city = not asked and bool(named) and (checked or len(whole & self._cities) >= 2 or bool(
            whole & {stem("another"), stem("other")}))
        # not "Is this your first time visiting Oslo?", "Which terminal does your flight leave from in Lisbon?",
        # "What is the purpose of your trip to Oslo?"
        # "Would you accept a flight with a layover in another city …?"
        there = contains(words, (stem("first"), stem("time"))) or ws & NOT_THE_TRIP
        return bool((routed or where or leave_from or named_city or (stem("start"), stem("point")) in pairs)
                    and not back and not there)
