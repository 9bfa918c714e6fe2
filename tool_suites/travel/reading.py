"""How the traveller reads a question: a confirmation of a flight, the slots it asks about, or nothing.

**Decision (measured with ``bench/traveller.py`` on tests/suites/data/traveller_questions.tsv):** words
are reduced to Snowball stems (``snowballstemmer``, the pure-Python English stemmer Sphinx uses; no
model, no data files), so one lexicon entry covers its inflections (``price``/``prices``/``priced``,
``airline``/``airlines``, ``depart``/``departing``) and the rules below are written over concepts, not
surface forms. Also tried: the lemmatiser ``simplemma`` 2.0 (a 19 MB wheel of 54 languages'
dictionaries, 0.3 µs a word) gives true lemmas (``expenses`` → ``expense``, ``cheaper`` → ``cheap``)
but keeps ``prioritise``/``prioritize``/``priority`` and ``depart``/``departure`` apart, so the lexicon
would list them all again; Snowball merges them and the two collisions it makes are listed in
:data:`.lexicon.UNSTEMMED` (snowballstemmer: 2 MB installed, pure Python). A misspelt long cue
(``budjet``, ``airlne``: one edit away) is read as the cue (:func:`.lexicon.spelled`). A small trained
intent model was measured and not adopted (docs/suites.md); a smaller one is: when the rules find a slot, the gate
on questions about nothing (:mod:`.none_gate`, trained on the corpus) may read the question as asking nothing —
on rounds 36–49, each read by the rules as they stood before it and a gate trained only on the rounds before it,
questions about nothing went from 342 to 362 of 395 right and slot questions stayed at 604 of 625
(bench/traveller_none_gate.py --measure --to 49). The old reader — whole-word synonyms —
got 56 % of slot questions right on the corpus's tuning part, 46–71 % on its held-out parts; this
one's figures are in docs/suites.md.

The rules, in order:

1. **Confirmation** — a question that commits or accepts (book, pay, charge, ticket, go ahead, lock
   in, approve; fine, okay: read in its sentences that end in ``?``, or in all of it when those are a
   bare "Shall I?") and names one of the world's flights (``AS12301``, case-insensitive, a space or
   hyphen allowed after the airline code: ``as 12301``, ``AS-12301``) or one of its holds (``H1``) —
   the one its asking sentences name first; or it proposes to pay for / complete / issue the ticket
   for "the held (reserved) seat" while exactly one hold is active (not to release, cancel or let go
   of it: the verb's object within four words). The flight named is the object. A flight named in a
   report before another question ("EG55120 is $276. Is that affordable?") is context, and so is a question
   about an amount ("what is the most you are willing to pay?", "how high are you willing to go?": the
   budget, whatever flights were named; not "shall we pay for it?"). Tool output quoted before the question
   (a JSON object or list, a ``|`` table; then a dash, a line break or a capital) ends its own sentence,
   and so does a recap or report before a dash whose question stands alone ("You said your budget is
   $300 — and which airline?"; not "— what number would break it?", which refers back). When
   the asking part names no flight, the held seat it speaks of ("the held seat", "the seat I'm holding") is
   the object, else the flight named last before it.
Only the sentences that end in ``?`` — and, beside them, those that open like a question without ending as a
statement: ``what``, ``which``, ``how`` … not followed by a subject ("any airline preference? also whats ur max
price", not "when you're ready I'll search"), and indirect questions ("I'd like to know which airlines …") — are
read for slots when there are any (an agent's "I found flights
under $300 with Borealis. Which day do you want to fly?" asks about dates only), except that a question
referring back to its context reads it: "which would you accept?" after two wishes were named asks the
priority, "avoid those dates?" after a festival was named asks about events, and a question that names no
wish itself but refers back ("do you prefer one of them?") after a context naming one wish asks that wish.
A short tag question ("Is that fair?", "Does that sound right?") after a statement about the traveller (a verb
of assuming, or "you" as a subject: "I assume you're not tied to any airline or date") asks what the
statement named, and nothing after a report ("I found a flight for you at $280"). A clause that states what is
known before asking ("Since your budget is capped at 400, …"; not "since when") is not read, but is context for
the rules that refer back. With no ``?`` at all, sentences that wish the
traveller well ("I hope your day is going well", "thanks") are not read.

2. **Priority** — a question about how the wishes rank against each other (``more important``,
   ``matters most``, ``rank``, ``trade``, ``compromise``, ``precedence``, ``give up``, a ``rather … or``
   between two different wishes, a ``favour``/``prefer``/``pick`` … ``over`` with two wishes named,
   ``value more``, ``optimise``, ``hard requirement``, ``which`` + a word for the wishes ("which
   preference"), ``which``/``what`` + a verb of letting go ("which one should I drop?"), ``which`` as a
   pronoun with a verb of choice and two wishes named ("…on the wrong airline: which should I
   prefer?"), ``matters least``, a verb of outranking with two wishes or ``which`` ("should price beat
   the airline?", "which should win?"), one wish given up to keep another ("a higher fare to keep your
   airline"), a condition with two wishes and ``still``/``different``/``instead`` ("if the cheapest flight
   were on a different airline, would you still take it?"), ``which one`` or ``most`` with ``flexible``,
   ``worth`` after a context naming two wishes and a trade ("$80 cheaper, but with another carrier:
   worth switching?"), a weak verb of choice (``accept``, ``switch``, ``move``) with a different wish
   on each side of an ``or`` ("would you accept the later date, or switch airlines?"), ``let go`` of a
   wish or "first", a verb of outranking "everything else", ``sooner … than``, "when push comes to
   shove", ...) asks about the priority order and nothing else, whatever wishes it names — unless a
   question about slots comes first, on its own ("What's the maximum you'd pay, and would you rather
   stretch it or compromise?" asks the budget and the priority) — but ``important`` or ``absolutely
   need`` with one wish and no comparison asks that wish ("by what date do you absolutely need to have
   landed?").
3. **Slots** — the question is cut into clauses (at ``,`` ``;`` ``:`` ``and`` ``or`` ``as well as``); a
   clause that mentions city events (``festival``, ``conference``, ``event``, ``taking place``,
   ``going on in``, ``hosting`` ...) asks about ``events`` only (its ``dates``/``destination`` words
   are the event's); otherwise each slot one of whose cues the clause holds is asked: ``budget``
   (price, cost, fare, afford, spend, pay, money, a ``$``/``£``/``€`` amount, ``how much`` + a verb or
   pronoun (not how much a bag weighs or costs), "how deep are your pockets", "how high"; not the price
   of something else: "the price of airport parking", "a bag on this fare"),
   ``airline`` (airline, carrier, operator, alliance, an airline's name, ``fly with``, ``with whom``,
   ``whose planes``; a "low-cost carrier" is an airline, not the budget; ``company``
   only next to flying or booking, not "a receipt for your company"), ``dates``
   (date, day, when, weekday and month names, ordinals, ``how soon``, ``time frame``,
   morning/afternoon/evening naming a day (not ``good morning``, nor a time of day: "a morning or an
   evening departure", "a morning flight"), ``depart``/``leave`` not followed by ``from``;
   not ``date of birth``, nor ``when`` as a conjunction: "message me when it's done", nor after a
   preposition of time, a length of time or small talk: "a reminder before departure", "valid for six
   months", "how's your week been?"; ``price alerts`` is a service, not the budget),
   ``route`` (origin, destination, route — not after a preposition of place: "a car at your
   destination" —, a city of the trip, ``where``/``city``/``airport`` with a verb of travel or after
   ``which``, ``leave from``, ``fly out of``, "departure and arrival cities"; not a city something else
   is in, "a hotel in Oslo" (but "are you based in Lisbon?"), nor a return trip's cities and dates, "a return
   flight back to Lisbon"; a round trip includes the outbound).
   A question offering a service (``notify``, ``reminder``, ``alert``) asks about no slot but events in
   the part of it the offer covers, up to the next ``and``/``or``/``;`` ("notify you if the fare drops?",
   "a reminder before you leave for the airport?"; "remind me of your destination" still asks it, and
   "a reminder, and which airline?" asks the airline); a travel document's dates (a passport's expiry,
   "valid for six months"), a hotel's check-in date and a weather forecast's are not the trip's;
   buying tickets for an event is a service, not the event; with a payment method
   named, ``pay`` asks how, not how much; prices "displayed in euros or dollars" are a display choice;
   "the airline's cancellation policy" names no airline choice. ``stay under``/``go above``/``keep … under``
   bound the fare. Events are also named ones (a carnival, the Oktoberfest, a football match, the
   world's own: the Lantern Week), and a clause later in an event's sentence that neither addresses the
   traveller nor opens like a question gives the event's own dates and place ("any events in Oslo that
   might reduce availability around 12 to 13 March?" asks about events only). The price as shown
   ("is the price shown per person?"), what a fare includes, an airline's app wanted or a loyalty
   number for "your preferred airline" ask no slot. A numbered list of questions ("(1) your airline,
   (2) your dates, (3) which matters most") reads each item; the agent's own plan or report before
   the question ("Before I search Lisbon to Oslo, …", "Now I have the route.") is not read, nor a recap
   clause ("When you said 'the usual one', which carrier did you mean?"). A wish traded for a saving ("a day
   later if it saves you $50?") and one of two wishes to drop or keep ("drop the airline or the date?") ask
   the priority, and so does one given up for a better another ("go over it for a better date?"); a cap or
   "your limit" is the budget. The agent's reason after its question ("…, so I can tell whether the $345 fare
   fits?") is not read; "preferred" before a wish ("your preferred airline") names it without choosing. A
   request ending in "." ("Please share your budget.") is asked like a question; "could you provide these?"
   after a list of the wishes asks them, "which of these do you want?" after a list of flights asks nothing.
   "What time …?" asks a time of day (not "what time frame"); "departing from Lisbon" states the route.
4. Nothing matched: the question asks about nothing the traveller knows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .confirmation import ConfirmationRules
from .lexicon import (
    ADDING,
    AMOUNT_ASKED,
    ANY_FLIGHT,
    ASKS_AGAIN,
    ASSUMING,
    BUDGET,
    BUDGET_ASKED,
    BUDGET_PAIRS,
    BUYING,
    CURRENCIES,
    DISPLAY,
    DOCUMENTS,
    DROP_OR_KEEP,
    EMOJI,
    EVENT_BACK,
    EVENT_HEADING,
    EVENT_SUBJECT,
    EVENTS,
    EXTRAS,
    FARE_KINDS,
    FLIGHT_DESCRIBED,
    FLIGHT_ONLY,
    GIVING,
    HELP_ROUTE,
    HOLD_LUGGAGE,
    HOLD_WORDS,
    HOW_MUCH_NEXT,
    INCLUDES,
    INDIRECT,
    JUDGING,
    LODGING,
    NOT_FARE_UNITS,
    NOT_SUBJECT,
    NOTIFY,
    OFFER,
    PART,
    PAY_METHODS,
    PAY_WORDS,
    PLACES,
    PRIORITY,
    PURPOSE_CLAUSE,
    QUESTION_OPENER,
    QUESTION_START,
    QUOTED,
    QUOTED_OUTPUT,
    RANKED,
    RECAP,
    RECAP_WHEN,
    REFER_BACK,
    REPORT,
    ROUTE_PAIR,
    ROUTE_PURPOSE,
    SEARCHING,
    SEATING,
    SENTENCE,
    STATED,
    TAG_QUESTION,
    TRADE_NAMED,
    WEATHER,
    WEATHER_NOUNS,
    WELL_WISH,
    WORTH_TRADE,
    stem,
    stems,
)
from .none_gate import shipped
from .phrases import (
    DATE_NOUNS,
    bare_date,
    contains,
    dash_ends_statement,
    date_cues,
    event_tickets,
    events_named,
    extra_first,
    in_the_day,
    leaves,
    lets_go,
    ordinal,
    priced_extra,
    return_trip,
    visiting,
)
from .priority import PriorityRules
from .route import RouteRules


@dataclass
class Reading:
    """What a question asks: ``confirm`` (of ``flight``), ``ask`` (about ``slots``, maybe none)."""

    kind: str
    slots: list[str] = field(default_factory=list)
    flight: str | None = None


def flight_pattern(flight_ids: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern naming any of these flights: code + number, any case, with an optional space or hyphen."""
    parts = []
    for fid in sorted(set(flight_ids), key=len, reverse=True):
        m = re.fullmatch(r"([A-Za-z]+)(\d+)", fid)
        parts.append(rf"{re.escape(m.group(1))}[\s-]?{m.group(2)}" if m else re.escape(fid))
    return re.compile(r"\b(" + "|".join(parts) + r")(?![-\d])", re.I) if parts else None


class Reader(ConfirmationRules, PriorityRules, RouteRules):
    """Reads questions for one traveller: its world's flights, holds, airlines and cities."""

    def __init__(self, flights: Iterable[str], holds: dict[str, dict], airlines: Iterable[str] = (),
                 cities: Iterable[str] = ()):
        self.flights = {re.sub(r"[\s-]", "", f).upper(): f for f in flights}
        self._flight = flight_pattern(self.flights.values())
        self.holds = holds
        self._airlines = [tuple(stems(a)) for a in airlines if a]
        self._cities = {stem(c.lower()) for c in cities if c}

    def read(self, question: str) -> Reading:
        """What a question asks: the rules' reading, less its slots when the gate (:mod:`.none_gate`) finds that it
        asks about nothing."""
        reading = self.read_by_rules(question)
        if reading.kind == "ask" and reading.slots and shipped().asks_nothing(stems(question)):
            return Reading("ask", [])
        return reading

    def read_by_rules(self, question: str) -> Reading:
        question = question.replace("\u2019", "'")  # a typographic apostrophe: "you’re"
        # an emoji between a statement and a question ends the statement ("… Lisbon → Oslo ✈️ Could you tell me …?")
        question = EMOJI.sub(lambda m: "." if re.match(r"\s+[A-Z]", question[m.end():]) and re.search(
            r"\w\s*$", question[:m.start()]) else "", question)
        if "{" in question or "|" in question:
            question = QUOTED_OUTPUT.sub(r"\1. ", question)
        question = dash_ends_statement(HOLD_LUGGAGE.sub("checked", question))
        question = ROUTE_PURPOSE.sub(" ", question)  # "To book your flight from Lisbon to Oslo I will need …": stated
        question = HELP_ROUTE.sub("help", question)  # "I'd be happy to help you book a flight from Lisbon to Oslo."
        sentences = [x for x in SENTENCE.split(question.strip()) if x.strip()]
        flight = self._confirmed(question, sentences)
        if flight is not None:
            return Reading("confirm", flight=flight)
        # what an agent states before its question ("I found flights under $300. Which day?") is context:
        # only the sentences that ask are read for slots (all of it when none ends in "?")
        asking = ""
        if any(x.rstrip().endswith("?") for x in sentences):  # and those that open like one: "also whats ur max price"
            asking = " ".join(x for x in sentences if x.rstrip().endswith("?") or QUESTION_OPENER.match(x)
                              and not x.rstrip().endswith((".", "!")) or INDIRECT.match(STATED.sub("", x)))
        if not asking:  # no sentence ends in "?": all of it but the well-wishes
            kept = [x for x in sentences if not WELL_WISH.match(x)]
            # "Now I have the route. Budget, airline, date: …" (not "I have to confirm your travel dates.")
            asked = [x for x in kept if not REPORT.match(x) or {"you", stem("your")} & set(stems(x))]
            asked = [x for x in asked if not RECAP.match(x)] or asked  # "You want to fly Lisbon to Oslo. what is …"
            kept = asked or kept
            if not kept:
                return Reading("ask", [])
            asking = question if len(kept) == len(sentences) else " ".join(kept)
        # the question's context: what it states before it asks, in sentences or in a "since …" clause
        context = [x for x in sentences if not x.rstrip().endswith("?")] if asking is not question else []
        context += STATED.findall(asking) + PURPOSE_CLAUSE.findall(asking)
        # "Since your budget is capped at 400, which airlines …?", "… so I can tell whether the $345 fare fits?"
        asking = PURPOSE_CLAUSE.sub("", STATED.sub(" ", asking))
        if TAG_QUESTION.match(asking):  # "I assume you're not tied to any airline or date. Is that fair?"
            stated = stems(" ".join(context))
            about_you = set(stated) & ASSUMING or any(w == "you" and (not i or stated[i - 1] not in NOT_SUBJECT)
                                                     for i, w in enumerate(stated))
            return Reading("ask", sorted(self._mentions(stated)) if about_you else [])
        # "the maximum price … for your flight with Borealis on 2026-03-12?", "What is the budget for the flight …?"
        if AMOUNT_ASKED.search(asking) or BUDGET_ASKED.search(asking):
            asking = FLIGHT_DESCRIBED.sub(lambda m: m.group(0) if ASKS_AGAIN.search(m.group(0)) else "", asking)
        if ROUTE_PAIR.search(asking):
            asking = ROUTE_PAIR.sub("origin and destination", asking)
        words = stems(asking)
        about_priority = self._about_priority(words)
        first = self._slots_then_priority(asking, about_priority)
        if RANKED.search(asking):
            return Reading("ask", ["priority"])  # "date > budget > airline, correct?"
        if first:  # "What's the maximum you'd pay, and would you rather stretch it or compromise?"
            return Reading("ask", [*first, "priority"])
        if about_priority:  # a numbered list of questions, one of them the priority: each item read on its own
            listed = self._listed(asking)
            if listed:
                return Reading("ask", listed)
        if about_priority or any(self._switched(stems(x)) for x in SENTENCE.split(asking)):
            return Reading("ask", ["priority"])
        heading = EVENT_HEADING.match(asking)  # "Lantern Week: what are the start and end dates?" asks the event's
        if heading and self._clause_slots(stems(heading.group(1)), words) == ["events"]:
            rest = stems(heading.group(2))
            if not {"you", stem("your")} & set(rest) and set(self._clause_slots(rest, words)) <= {"dates", "events"}:
                return Reading("ask", ["events"])
        slots: list[str] = []
        for sentence in SENTENCE.split(asking):
            event = False  # an event named earlier in the sentence: its dates and place are the event's
            for part in OFFER.split(sentence):  # clauses, grouped by what a service offer covers
                part_words = stems(part)
                # a service offer: "notify you if the fare drops?", "a reminder before you leave for the airport?"
                offer = set(part_words) & NOTIFY and not contains(part_words, (stem("remind"), "me"))
                for clause in PART.split(part):
                    clause_words = stems(clause)
                    found = self._clause_slots(clause_words, words)
                    # "Lantern Week: is that the festival …? Could you confirm its dates?": the event's dates
                    # (or "… or do you know other dates for it?")
                    if "dates" in found and events_named(words) and stem("your") not in clause_words and (any(
                            a in ("it", "their") and b in DATE_NOUNS for a, b in zip(clause_words, clause_words[1:]))
                            or any(clause_words[k:k + 3] in ([d, p, "it"] for p in ("for", "of"))
                                   for k, d in enumerate(clause_words) if d in DATE_NOUNS)):
                        found = [s for s in found if s != "dates"] + ["events"] * ("events" not in found)
                    # (a question whose subject is the event: "is the Lantern Week …, or is it a different week?")
                    if (event and set(found) <= {"dates", "route", "budget"}
                            and (not QUESTION_START.match(clause) or EVENT_SUBJECT.match(clause))
                            and not {"you", stem("your")} & set(clause_words) and set(clause_words) & EVENT_BACK):
                        continue  # "any events … that might reduce availability around 12 to 13 March?"
                    if event and found == ["dates"] and bare_date(clause_words):
                        continue  # "does Lantern Week end on March 12 or March 13?"
                    if "dates" in found and stem("avoid") in clause_words and events_named(words):
                        # "Is the Lantern Week from … to …? Please confirm the dates you want to avoid.": the event's
                        found = [s for s in found if s != "dates"] + ["events"] * ("events" not in found)
                    if "events" in found and stem("outside") in clause_words and set(clause_words) & DATE_NOUNS:
                        # "which date outside Lantern Week would you like?": the traveller's date
                        found = [s for s in found if s not in ("events", "dates")] + ["dates"]
                    event = event or "events" in found
                    for s in found:
                        if s not in slots and (s == "events" or not offer):
                            slots.append(s)
        if context:  # the question refers back to its context
            whole = stems(question)
            if stem("worth") in words and len(self._mentions(whole)) >= 2 and set(whole) & WORTH_TRADE:
                return Reading("ask", ["priority"])  # "$80 cheaper, but with another carrier: worth switching?"
            # (not a plain list of flights, nor "… both at the same price. Which departure time suits you?")
            if (not slots and "which" in words and len(self._mentions(whole)) >= 2 and stem("time") not in words
                    and set(whole) & (WORTH_TRADE | TRADE_NAMED)):
                return Reading("ask", ["priority"])  # "one is over budget, the other on another airline: which?"
            if (not slots and set(words) & DROP_OR_KEEP and "one" in words and len(self._mentions(whole)) >= 2
                    and not set(words) & HOLD_WORDS):  # not "Should I keep one of them on hold for you?"
                return Reading("ask", ["priority"])  # "… the date and the budget both matter. Keep one: which?"
            if set(slots) <= {"dates"} and set(whole) & EVENTS and set(words) & REFER_BACK and not (
                    stem("window") in words and stem("avoid") not in words  # "any day in that window, …?"
                    or stem("outside") in whole):  # "Which date outside it would you like?": the traveller's
                return Reading("ask", ["events"])  # "there is a festival in March: avoid those dates?"
            if not slots and set(words) & {"these", "those", "them"} and set(words) & GIVING:
                for part in context:  # "I need your travel date(s), …, and which matters most. Could you share those?"
                    first = self._slots_then_priority(part, self._about_priority(stems(part)))
                    if first:
                        return Reading("ask", [*first, "priority"])
            if not slots and set(stems(" ".join(context))) & PRIORITY and len(words) <= 6:
                return Reading("ask", ["priority"])  # "a trade-off: DW40551 at $199, or EG60238 at $342. Your call?"
            if not slots and set(words) & {"these", "those", "them"} and set(words) & GIVING:
                named = self._mentions(stems(" ".join(context)))
                if named:  # "I'll need: • Your budget • Preferred airline • Travel date(s). Could you provide these?"
                    return Reading("ask", sorted(named))
            listed = len(set(ANY_FLIGHT.findall(" ".join(context)))) >= 2  # "I found 4 flights: DW77701 $245, …"
            too_soon = "too" in words and set(words) & {stem("early"), stem("late")}  # "Is that too early for you?"
            refer = set(words) & (REFER_BACK | {"one", "two", stem("limit"), stem("figure"), stem("number")})
            # (an amount asked back may name the ticket: "When you say you have a budget in mind, what figure is that
            # per ticket?")
            amount = refer & {stem("limit"), stem("figure")}
            if (not slots and refer and not too_soon and not set(words) & (EXTRAS | SEATING)
                    and (amount or not set(words) & FLIGHT_ONLY) and not listed  # not "a seat … if free?"
                    and not (stem("keep") in words or lets_go(words))):  # nor "keep it …, or let it go?"
                # (the recap's own "when you say" names no date)
                named = self._mentions(stems(RECAP_WHEN.sub(" ", " ".join(context))))
                # (a number is the budget's: "You said "not too expensive" — could you give me an actual number?",
                # not "Got it, Aster Air. Do you have an Aster Air loyalty number?")
                if len(named) == 1 and (named == {"budget"} or refer - {stem("number")}):
                    return Reading("ask", sorted(named))  # "I see four carriers. Do you prefer one of them?"
        return Reading("ask", slots)

    def _clause_slots(self, words: list[str], question: list[str] = ()) -> list[str]:
        """The slots one clause asks; ``question`` is the whole asking text's stems (a payment method or a
        currency named in another clause changes what "pay" or "prices" mean here)."""
        if not words:
            return []
        ws, whole = set(words), set(question) | set(words)
        if words in (["from"], ["to"]) and not whole & DATE_NOUNS:  # "from, to, when, and max price?"
            return ["route"]
        # "something going on in the city" is an event (not "going on a trip")
        if events_named(words) or any(t == (stem("going"), "on", "in") for t in zip(words, words[1:], words[2:])):
            # not "buy tickets for the festival?", "a hotel near the festival venue?"
            if ws & BUYING and event_tickets(words) or ws & LODGING or visiting(words):
                return []
            if words[:2] in (["apart", "from"], [stem("other"), "than"]) or words[:1] in (["except"], ["besides"]):
                return []  # "… is any day in that window fine for you, apart from the festival?": the event set aside
            where = any(a in ("which", "what") and b in PLACES for a, b in zip(words, words[1:]))
            return ["events", "route"] if where else ["events"]  # "which city is the conference in?"
        pairs = set(zip(words, words[1:]))
        out = []
        how_much = any(a == "how" and b == "much" and (i + 2 < len(words) and words[i + 2] in HOW_MUCH_NEXT or
                                                       i + 2 == len(words))
                       for i, (a, b) in enumerate(zip(words, words[1:])))
        judged = ws & JUDGING  # "is the price quoted acceptable?", "a higher fare if it included a bag?"
        # not "at no extra cost", "free of charge": nothing to pay
        free = {i for i, w in enumerate(words) if w in (stem("cost"), stem("charge"))
                and words[max(0, i - 2):i] in (["no", "extra"], ["no", stem("additional")], ["at", "no"],
                                               [stem("free"), "of"])}
        budget_cues = {w for i, w in enumerate(words) if w in BUDGET and not priced_extra(words, i) and i not in free
                       and not (words[i - 1:i] and words[i - 1] in FARE_KINDS)  # "a flexible fare or the basic fare?"
                       and (judged or not set(words[i + 1:i + 2]) & QUOTED)}  # "is the price shown per person?"
        if "or" in question and ws & {stem("whatever"), stem("whichever")} and budget_cues <= {
                stem("cheap"), stem("cheaper"), stem("cheapest")}:
            budget_cues = set()  # "Any airline preference, or should I just go with whatever is cheapest?": a default
        if ws & INCLUDES and ws & EXTRAS and not judged:  # "does the Cirrus Lines fare include a checked bag?"
            budget_cues -= {stem("fare"), stem("fares"), stem("price"), stem("prices"), stem("ticket")}
        if whole & PAY_METHODS or any(w == stem("pay") and set(words[max(0, i - 2):i]) & {"one", "who", stem("person")}
                                      for i, w in enumerate(words)):  # "the same person as the one paying?"
            budget_cues -= PAY_WORDS | {stem("ticket")}
        # (or "Do you want to pay in euros or US dollars?": the currency paid in)
        paid_in = "or" in whole and len(whole & CURRENCIES) >= 2
        if (whole & DISPLAY or paid_in) and whole & CURRENCIES:
            budget_cues -= CURRENCIES | {stem("price"), stem("prices"), stem("fare"), stem("charged")} | (
                PAY_WORDS if paid_in else set())
        bounded = any(w in (stem("keep"), stem("stay")) and set(words[i + 1:i + 5]) & {"under", "below"}
                      and not set(words[i + 1:i + 8]) & NOT_FARE_UNITS  # not "keep the layover under 2 hours"
                      for i, w in enumerate(words))  # "what figure should I keep the search under?"
        if ws & (EXTRAS | SEATING) and ws & ADDING:  # "do you want to add a checked bag / extra legroom for $25?"
            budget_cues = set()
        if stem("weigh") in ws or extra_first(words) and "you" not in ws or stem("matter") in ws:
            how_much = False  # "how much does a bag weigh / cost?", "how much does the date matter?"
        how_high = any(a == "how" and b == stem("high") and c in HOW_MUCH_NEXT  # "how high can you go?"
                       for a, b, c in zip(words, words[1:], words[2:]))
        pockets = {stem("deep"), stem("pockets")} <= ws  # "how deep are your pockets?"
        # "could you go a bit higher?" (after a report of the fares)
        # (or "What is the most you could go up to?", "could you go up to $350?", "the most you could stretch to?")
        pockets = pockets or any(w == stem("go") and ("higher" in words[i + 1:i + 4] or words[i + 1:i + 3] == [
            "up", "to"] and (i + 3 == len(words) or words[i + 3] in ("$", "€", "£") or words[i + 3].isdigit()))
            or w == stem("stretch") and words[i + 1:i + 2] == ["to"] and i + 2 == len(words)
            for i, w in enumerate(words))
        if (budget_cues or how_much or how_high or (stem("your"), stem("means")) in pairs or pairs & BUDGET_PAIRS
                or bounded or pockets):
            out.append("budget")
        if self._asks_airline(words, whole):
            out.append("airline")
        # (or "a preferred departure time on 2026-03-12?": a date given, as "on date", is not asked)
        day_nouns = {w for i, w in enumerate(words) if w in DATE_NOUNS and words[i - 1:i] != ["on"]
                     and not (w == stem("day") and words[max(0, i - 2):i] == [stem("time"), "of"])}
        if (any(a in ("what", "which", stem("departure"), stem("arrival"), stem("prefer")) and b == stem("time")
                and c not in (stem("frame"), stem("window")) for a, b, c in zip(words, words[1:], [*words[2:], ""]))
                and not day_nouns):
            return out  # "What time would you like to arrive in Oslo?": a time of day, which the traveller has not
        # "which city do you leave from?" asks the origin; "fly from Brussels to Bangkok" states it
        leave_from = any(words[i] in (stem("leave"), stem("depart"), stem("fly"), stem("travel"))
                         and words[i + 1] == "from" and (i + 2 == len(words) or words[i + 2] not in self._cities)
                         for i in range(len(words) - 1)) or ("from", "which") in pairs or ("from", "where") in pairs
        leave_from = leave_from or contains(words, (stem("fly"), "out", "of"))  # "flying out of Newark"
        birth = stem("birth") in ws or stem("born") in ws or stem("birthday") in ws
        window = any(a in (stem("travel"), stem("time"), stem("date")) and b in (stem("window"), stem("frame"))
                     for a, b in pairs) or stem("timeframe") in ws
        # "may" is the month only next to a date ("in May", "May 3"), not "may I ask"
        month_may = any(b == "may" and a in ("in", "of", "earli", "late", "mid") or a == "may" and b.isdigit()
                        for a, b in pairs)
        # ("you're departing from Lisbon …?", "departing Lisbon, …?" state the route; "leave later in the day?" asks a
        # time of day)
        dated = date_cues(words) - {stem("leave"), stem("depart")} or window or month_may or ordinal(words) or (
            leaves(words) and not leave_from and not in_the_day(words) and not any(
                w in (stem("leave"), stem("depart")) and words[i + 1:i + 2] and (
                    words[i + 1] == "from" or words[i + 1] in self._cities) for i, w in enumerate(words)))
        # "an event you're timing this trip around" (not "what timing works best, and any events?")
        timing = date_cues(words) == {"timing"} and whole & EVENTS and not ws & {"what", "which", "when"}
        # not "is your passport valid for six months?", "a check-in date for the room", "the weather on arrival day"
        back = return_trip(words)  # "a return flight from Oslo back to Lisbon?" is another journey
        # "check the weather for your dates?", "what the weather will be like in March?" (not "a month with better
        # weather")
        weather = ws & WEATHER or stem("weather") in ws and (ws & SEARCHING or stem("like") in ws
                                                              and ws & {"what", "how"} or ws & WEATHER_NOUNS)
        if dated and not birth and not ws & (DOCUMENTS | LODGING) and not weather and not timing and not back:
            out.append("dates")
        if self._asks_route(words, whole, dated=bool(dated), weather=bool(weather), leave_from=leave_from,
                            back=back, asked=bool(out)):
            out.append("route")
        return out
