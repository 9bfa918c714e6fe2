"""Small tests over a clause's stems that the reader's rules (:mod:`.reading`) are written with: which date
words ask for a date, whether a price is the flight's, whether a verb of leaving or of letting go applies."""

from __future__ import annotations

import re

from .lexicon import (
    AIRLINE,
    AMOUNT_WORDS,
    ARRIVAL,
    DASH,
    DATES,
    DURATION,
    EVENT_TICKETS,
    EVENTS,
    EXTRA_PAID,
    EXTRAS,
    FLIGHT_NOUNS,
    HOLD_WORDS,
    LOCATIVE,
    NUMBER_WORDS,
    NUMBERED,
    PAID_FOR,
    QUANTIFIERS,
    QUESTION_START,
    RELEASE,
    SEARCHING,
    SMALL_TALK,
    TIME_PREPOSITIONS,
    TIMES_OF_DAY,
    UNITS,
    WHEN_NOT,
    YES_NO_START,
    stem,
    stems,
)

DATE_NOUNS = frozenset({stem("date"), stem("dates"), stem("day"), stem("days")})


#: what stands before "preferred" used as an adjective ("your preferred airline")
ADJ_BEFORE = frozenset({stem("your"), "a", "the", "my", "any", "their", "our"})


#: before a departure, these make it a time of day ("a late-night or red-eye departure")
TIME_OF_DAY_WORDS = TIMES_OF_DAY | {stem("late"), stem("early"), "eye"}
#: "before I search …": what the agent does meanwhile
WHILE_SEARCHING = {stem(w) for w in ("before", "while", "until", "after")}


def date_cues(words: list[str]) -> set[str]:
    """The date cues of a clause, less those that do not ask for a date: ``when`` as a conjunction about
    the booking ("message me when it's done"), a cue after a preposition of time ("a reminder before
    departure"), a length of time ("valid for six months"), and small talk ("how's your week been?")."""
    out: set[str] = set()
    if DATES.isdisjoint(words):
        return out
    # a clock time's departure ("Is the 08:15 departure too early for you?"): a time of day
    clock = any(a.isdigit() and b in (stem("departure"), stem("arrival")) for a, b in zip(words, words[1:]))
    # what the agent will do about a hold first: "Should I release hold H1 before I search other dates?"
    meanwhile = next((k for k in range(len(words) - 2) if words[k] in WHILE_SEARCHING
                      and words[k + 1] in ("i", "we") and words[k + 2] in SEARCHING), None)
    if meanwhile is not None and HOLD_WORDS & set(words[:meanwhile]):
        words = words[:meanwhile]
    for i, w in enumerate(words):
        if w not in DATES:
            continue
        before = words[i - 1] if i else ""
        after = words[i + 1] if i + 1 < len(words) else ""
        if clock and w == stem("departure"):
            continue
        # "a late-night or red-eye departure", "the hour of departure": a time of day
        if w == stem("departure") and (set(words[max(0, i - 4):i]) & TIME_OF_DAY_WORDS
                                       or words[max(0, i - 2):i] in ([stem("hour"), "of"], [stem("time"), "of"])):
            continue
        if w == stem("day") and in_the_day(words):
            continue  # "would you rather leave later in the day?"
        if w == stem("day") and before == "the" and after == "you" and words[i + 2:i + 3] and words[i + 2] in (
                ARRIVAL | {stem("leave"), stem("fly"), stem("depart")}):
            continue  # "by a certain hour on the day you arrive": that day, not a date asked
        if w == stem("leave") and after in ("it", "them", "that", "this", "h"):
            continue  # "Do you want me to leave it in place for now?"
        if w == stem("schedule") and after in (stem("change"), stem("changes")):
            continue  # "contact you about schedule changes"
        # "the 08:15 departure … too early?", "…, or is it too early?": what it refers to was asked, not a date
        if w in (stem("early"), stem("late")) and before == "too" and (clock or i >= 2 and words[i - 2] in (
                "it", "that", "this")):
            continue
        timed = (stem("arrival"), stem("departure"), stem("flight"), "morn", stem("evening"), stem("night"), "at",
                 stem("start"), stem("bird"))  # "such an early start", "an early bird"
        if w in (stem("early"), stem("late")) and (after in timed or before in (stem("arrive"), stem("land"))):
            continue  # "is a late arrival okay for you?", "an early flight", "arrives late at night": a time of day
        if w == "when" and after in WHEN_NOT:
            continue
        if before in QUANTIFIERS and not {"which", "what", "when"} & set(words) and SEARCHING & set(words):
            continue  # "should I search both days in one go, or one at a time?"
        if w == "when" and after == "you" and i + 2 < len(words) and words[i + 2] in ARRIVAL:
            continue  # "a rental car when you land?"
        if w in (stem("leave"), stem("depart")) and before == "you" and i >= 2 and words[i - 2] in TIME_PREPOSITIONS:
            continue  # "a reminder 24 hours before you leave"
        if w == stem("departure") and (before in TIME_PREPOSITIONS or before in TIMES_OF_DAY):
            continue  # "a reminder before departure", "an evening departure"
        if w in TIMES_OF_DAY and time_of_day(words, i) or w == stem("day") and words[max(0, i - 2):i] == [
                stem("time"), "of"]:
            continue  # "a morning flight", "what time of day do you prefer?"
        if w in UNITS and (before.isdigit() or before in NUMBER_WORDS) and i >= 2 and words[i - 2] in DURATION:
            continue
        if w in UNITS and before == stem("your") and after in SMALL_TALK and (i < 2 or words[i - 2] not in
                                                                            ("on", "for", "that")):
            continue  # "how's your week been?", not "if the only flight on your day is over budget"
        out.add(w)
    return out


def in_the_day(words: list[str]) -> bool:
    """"later in the day", "early in the day", "before noon": a time of day, not a date."""
    return any(words[k:k + 3] == ["in", "the", stem("day")] and words[k - 1] in (
        stem("later"), stem("earlier"), stem("late"), stem("early")) for k in range(1, len(words) - 2)) or any(
        a in (stem("before"), stem("after")) and b in (stem("noon"), stem("midday")) for a, b in zip(
            words, words[1:], strict=False))


def time_of_day(words: list[str], i: int) -> bool:
    """Whether the time of day ``words[i]`` is a time preference, not a day: before a flight or its departure
    ("a morning flight", "an evening departure"), after an article ("do you prefer a morning or …", "in the
    evening") or set against another time of day ("morning or evening?"); "which morning should I book?",
    "Tuesday evening" name a day."""
    after = words[i + 1:i + 2]
    if after and after[0] in FLIGHT_NOUNS | {stem("departure")} or i and words[i - 1] in ("a", "an", "the"):
        return True
    if i and words[i - 1] in (stem("fly"), stem("leave"), stem("depart"), stem("travel"), "for", stem("prefer")):
        return True  # "do you prefer to fly morning, afternoon or evening?", "a preference for morning or …"
    if all(w in TIMES_OF_DAY or w in ("or", "and") for w in words):
        return True  # a list of times of day on its own ("…: morning, afternoon or evening?")
    near = words[max(0, i - 3):i] + words[i + 1:i + 4]
    return "or" in near and any(w in TIMES_OF_DAY for w in near)


def return_trip(words: list[str]) -> bool:
    """Whether a clause is about a journey back ("a return flight from Oslo back to Lisbon", "when would you fly
    back?"), whose cities and dates the traveller's one-way trip does not have (a round trip includes it)."""
    verbs = {stem("fly"), stem("flight"), stem("way"), stem("travel"), stem("head")}
    return any(a == stem("return") and b in FLIGHT_NOUNS or a in verbs and b == "back"
               for a, b in zip(words, words[1:]))


def priced_extra(words: list[str], i: int) -> bool:
    """Whether the budget cue ``words[i]`` prices something else: "the price of airport parking", "the cost of
    adding a second bag" (not "the cost of the flight with a meal"), or names the fare an extra is on ("a bag
    on this fare")."""
    if i + 1 < len(words) and words[i + 1] in ("of", "on", "for"):  # "a cap on checked bags"
        thing = next((w for w in words[i + 2:i + 8] if w in EXTRAS or w in FLIGHT_NOUNS), None)
        return thing in EXTRAS
    return (i >= 2 and words[i] == stem("fare") and words[i - 2] == "on" and words[i - 1] in ("this", "that")
            and bool(set(words) & EXTRAS))


def extra_first(words: list[str]) -> bool:
    """Whether an extra is named before the flight: "how much is a checked bag on this fare?" prices the bag,
    "how much is too much for a flight with a checked bag?" the flight."""
    return next((w for w in words if w in EXTRAS or w in FLIGHT_NOUNS), None) in EXTRAS


def leaves(words: list[str]) -> bool:
    """A verb of leaving whose subject is the traveller or a flight, not "which leaves three carriers"
    ("the flight that leaves first" still leaves), nor a hold left as it is ("leave it in place")."""
    return any(w in (stem("leave"), stem("depart")) and not (i and words[i - 1] in ("which", "that", "it", "this")
                                                             and not (i >= 2 and words[i - 2] in FLIGHT_NOUNS))
               and not (w == stem("leave") and words[i + 1:i + 2] in (["it"], ["them"], ["h"]))
               for i, w in enumerate(words))


def lets_go(words: list[str]) -> bool:
    """A verb of letting go (release, cancel, let go of) with the hold as its object, within four words."""
    for i, w in enumerate(words):
        end = i + 2 if w == stem("let") and words[i + 1:i + 2] == ["go"] else i + 1 if w in RELEASE else None
        if end is not None and set(words[end:end + 4]) & (HOLD_WORDS | {"it", "seat", "h"}):  # ("releasing H1")
            return True
        if w == stem("let") and "go" in words[i + 2:i + 6] and set(words[i + 1:words.index("go", i)]) & HOLD_WORDS:
            return True  # "let hold H1 go"
    return False


def events_named(words: list[str]) -> bool:
    """Whether a clause names a city event: a festival, a conference, "holidays in Oslo" — not the traveller's
    own holiday ("your holiday days", "on holiday") nor a time of year ("it is peak season")."""
    return any(w in EVENTS and not (w == stem("holiday") and i and words[i - 1] in ("your", "my", "a", "on"))
               and not (w == stem("season") and i and words[i - 1] in ("peak", "busi", "busy", "high", "low", "off",
                                                                         "this", "that"))
               for i, w in enumerate(words))


def adjectival_prefer(words: list[str]) -> list[str]:
    """The words with "preferred" before a wish marked as an adjective (``preferred:adj``): "your preferred
    airline", "a preferred date" name a wish; "which do you prefer?", "your preferences" choose or rank."""
    prefer = stem("prefer")
    if prefer not in words:
        return words
    wishes = AIRLINE | DATES | FLIGHT_NOUNS | {stem("carrier"), stem("option"), "one"}
    compound = {stem("travel"), stem("departure")}  # "your preferred travel date"
    return [f"{w}:adj" if w == prefer and 0 < i < len(words) - 1 and words[i - 1] in ADJ_BEFORE
            and (words[i + 1] in wishes or words[i + 1] in compound and words[i + 2:i + 3]
                 and words[i + 2] in wishes) else w for i, w in enumerate(words)]


def the_hold(words: list[str]) -> bool:
    """Whether the words speak of the held seat ("the held seat", "your hold", "the seat I'm holding"), not of
    holding one ("shall I hold and book it?")."""
    return any(w in HOLD_WORDS and i and (words[i - 1] in ("the", "my", "your", "this", "that")
                                          or w == stem("holding") and "seat" in words[max(0, i - 5):i])
               for i, w in enumerate(words))


def event_tickets(words: list[str]) -> bool:
    """Tickets *for* an event ("buy tickets for the festival"), not the flight's ("tickets to avoid the crowds")."""
    return any(w in EVENT_TICKETS and words[i + 1:i + 2] in (["for"], ["to"]) and set(words[i + 2:i + 4]) & EVENTS
               for i, w in enumerate(words))


def amount_to_pay(words: list[str], i: int) -> bool:
    """Whether ``words[i]`` (a verb of paying, or a word of accepting before "to pay") asks how much, not
    whether, to pay: "what you want to pay", "the most you'd be happy to pay" — not "shall I pay for it?"."""
    if words[i + 1:i + 3] in ([ "to", stem("pay")],):
        i += 2  # "happy to pay"
    if words[i] not in (stem("pay"), stem("spend")) or i and words[i - 1] in ("i", "we"):
        return False  # "shall we pay for it?"
    if words[max(0, i - 2):i] == ["me", "to"]:
        return False  # "do you want me to pay …?"
    return bool(set(words[max(0, i - 6):i]) & AMOUNT_WORDS)


def paid_for_a_wish(words: list[str], i: int) -> bool:
    """Whether ``words[i]``, a verb of paying, pays an amount for a wish — "would you pay $340 to fly Borealis?",
    "pay $40 more to fly on your date?" (a trade-off to weigh, not a payment to approve; not "shall I pay $280
    for AS12301?")."""
    if words[i] != stem("pay") or i and words[i - 1] in ("i", "we") or words[max(0, i - 2):i] == ["me", "to"]:
        return False
    j = past_amount(words, i + 1, i + 8)
    if names_flight_id(words[j:]) or set(words[j:j + 5]) & (HOLD_WORDS | {stem("seat")}):
        return False  # "pay $345 to keep your seat on AS12301?" pays for the flight
    return j > i + 1 and words[j:j + 1] == ["to"] and bool(set(words[j + 1:j + 2]) & PAID_FOR)


def names_flight_id(words: list[str]) -> bool:
    """Whether the stems name a flight id (read as two letters and a number: "bo", "45612")."""
    return any(len(a) == 2 and a.isalpha() and b.isdigit() and len(b) >= 3 for a, b in zip(words, words[1:]))


def goes_over(words: list[str], i: int) -> bool:
    """Whether ``words[i]`` goes over something, an amount between ("go over budget", "going $40 over budget",
    "pay over your budget")."""
    if words[i] not in (stem("go"), stem("going"), stem("pay"), stem("spend")):
        return False
    j = past_amount(words, i + 1, i + 5)
    return words[j:j + 1] in (["over"], ["abov"], ["beyond"])


def past_amount(words: list[str], j: int, stop: int) -> int:
    """The index after the amount that starts at ``words[j]`` ("$", "40", "a bit more"), looking no further than
    ``stop``."""
    while j < min(len(words), stop) and (words[j] in EXTRA_PAID or words[j].isdigit()):
        j += 1
    return j


def pays_more(words: list[str], i: int, reach: int = 3) -> bool:
    """Whether ``words[i]`` is "pay" with "more" or "extra" within ``reach`` words after it ("pay a bit more")."""
    return words[i] == stem("pay") and bool(set(words[i + 1:i + 1 + reach]) & {"more", "extra"})


def contains(words: list[str], seq: tuple[str, ...]) -> bool:
    n = len(seq)
    return n > 0 and any(tuple(words[i:i + n]) == seq for i in range(len(words) - n + 1))


def located(words: list[str], i: int) -> bool:
    j = i - 1
    while j >= 0 and words[j] in (stem("your"), "the", "my", stem("final")):
        j -= 1
    return j >= 0 and words[j] in LOCATIVE


def ordinal(words: list[str]) -> bool:
    """``the 14th``: tokens arrive split (``14``, ``th``)."""
    return any(a.isdigit() and len(a) <= 2 and b in ("st", "nd", "rd", "th") for a, b in zip(words, words[1:]))


def bare_date(words: list[str]) -> bool:
    """Whether a clause is a date and nothing else ("March 13", "the 14th"): an alternative to the date before it
    ("does Lantern Week end on March 12 or March 13?"), not a question of its own."""
    return bool(words) and all(w in DATES or w.isdigit() or w in ("st", "nd", "rd", "th", "the", "on", "of")
                               for w in words)


def visiting(words: list[str]) -> bool:
    """Whether the words offer to look something up for the stay ("Would you also like me to look up what
    festivals are happening in Oslo while you're there?"), not ask which event the trip must avoid ("What events
    are on while you'd be there?")."""
    offer = contains(words, ("me", "to")) and bool(set(words) & {stem("like"), stem("want")})
    return offer and (contains(words, ("while", "you", "re", "there")) or contains(words, (stem("your"), stem("stay"))))


def verb_place(words: list[str]) -> set[str]:
    """{"place"} when the words use it as a verb ("Do you want me to place a new hold?") or in "in place" ("leave
    it in place"), not as a location."""
    return {w for i, w in enumerate(words) if w == stem("place") and words[i - 1:i] in (["to"], ["i"], ["we"], ["in"])}


def holds_still(words: list[str]) -> bool:
    """"Does that still hold?", "does it hold true": the verb, not a seat on hold."""
    return any(a in ("still", "that", "it") and b == stem("hold") or a == stem("hold") and b in ("true", "up")
               for a, b in zip(words, words[1:]))


def numbered_items(text: str) -> list[str]:
    """A numbered list's lead and items ("Please provide: (1) your airline, (2) your dates" → the lead, "your
    airline,", "your dates"), or [] when the text has no list numbered from 1 (or lettered from a) in order."""
    marks = [m for m in NUMBERED.finditer(text)]
    marked = [m.group(1) or m.group(2) or m.group(3) for m in marks]
    numbers = [int(x) if x.isdigit() else ord(x.lower()) - ord("a") + 1 for x in marked]
    if len(marks) < 2 or numbers != list(range(1, len(marks) + 1)):
        return []
    bounds = [m.start() for m in marks] + [len(text)]
    items = [text[marks[i].end():bounds[i + 1]] for i in range(len(marks))]
    if any(re.search(r"\b[A-Z]{2}\s?\d{4,6}\b", item) for item in items):
        return []  # a list of flights to choose from, not of questions
    # the last item ends with its sentence: "(2) What dates work? Finally, which matters most?" asks one more
    last = re.split(r"(?<=[.?!])\s+", items[-1].strip(), maxsplit=1)
    return [text[:marks[0].start()]] + items[:-1] + last


def dash_ends_statement(text: str) -> str:
    """``text`` with a dash that ends a statement before a question of its own made a sentence break: "You said
    the 13th and $300 — do you want a window or an aisle seat?" asks about a seat only. Not when the question
    refers back ("— what number would break it?", "— does that still hold …?") or the statement is itself a
    question's start ("what's most important to you here — price, date, or airline?")."""
    for m in reversed(list(DASH.finditer(text))):
        start = max(text.rfind(c, 0, m.start()) for c in ".?!") + 1
        head, tail = text[start:m.start()], re.split(r"(?<=[.?!])", text[m.end():], maxsplit=1)[0]
        if (YES_NO_START.match(tail) and not QUESTION_START.match(head)
                and not set(stems(tail)) & {"it", "that", "this", "these", "those", "them", "one"}):
            text = text[:m.start()] + ". " + text[m.end():]
    return text
