"""The traveller reads paraphrased questions: the committed corpus (tests/suites/data/), split by split.

The corpus was written before the reader and independently of its word lists; bench/traveller.py
prints the same figures (and the time per question, which is not asserted here).
"""

from pathlib import Path

import pytest

from topoeval.protocol.discovery import SuiteRegistry

DATA = Path(__file__).parent / "data"
FILES = {"dev": "traveller_questions.tsv", "fresh": "traveller_questions_fresh.tsv",
         "final": "traveller_questions_final.tsv", "round4": "traveller_questions_round4.tsv",
         **{f"round{n}": f"traveller_questions_round{n}.tsv" for n in range(5, 58)}}


def corpus() -> list[tuple[str, str, str]]:
    """(split, label, question); in the first file every third question is the ``heldout`` split."""
    rows = []
    for name, fname in FILES.items():
        lines = [ln for ln in (DATA / fname).read_text(encoding="utf-8").splitlines() if ln.strip() and ln[0] != "#"]
        for i, line in enumerate(lines):
            label, question = line.split("\t", 1)
            rows.append(("heldout" if name == "dev" and i % 3 == 2 else name, label, question))
    return rows


def _traveller_class() -> type:
    """The traveller class as the suite loads it (importing the suite's package by hand would shadow
    its entry point)."""
    suite = SuiteRegistry().get("travel")
    task = suite.tasks(suite.parse_params({}), "test", 0, 1)[0]
    return type(suite.make_world(task).user)


Traveller = _traveller_class()


def traveller():
    truth = {"target": "AS12301", "acceptable": ["AS12301"], "budget": 300, "airline": "Borealis",
             "candidate_dates": ["2026-03-12", "2026-03-13"], "priority": ["date", "budget", "airline"],
             "origin": "Lisbon", "destination": "Oslo"}
    holds = {"H1": {"flight": "AS12301", "status": "active", "created": 1},
             "H2": {"flight": "BO45612", "status": "released", "created": 2}}
    flights = [{"flight_id": f, "airline": a} for f, a in (("AS12301", "Aster Air"), ("BO45612", "Borealis"),
                                                          ("DW77701", "Dune Airways"), ("CL12311", "Cirrus Lines"),
                                                          ("EG40200", "Egret Air"), ("AS12310", "Aster Air"))]
    return Traveller(truth, [], holds, flights)


def reading_of(question: str):
    """The flight a question confirms, or the sorted slots it asks (the corpus traveller's reading)."""
    t = traveller()
    t.ask(question)
    e = t.events[-1]
    return e["object"] if e["type"] == "confirm" else sorted(e["slots"])


def read(t, label: str, question: str) -> bool:
    t.ask(question)
    e = t.events[-1]
    if label.startswith("confirm:"):
        return e["type"] == "confirm" and e["object"] == label[8:]
    want = [] if label == "none" else sorted(label.split("+"))
    return e["type"] == "ask" and sorted(e["slots"]) == want


def rules_reading_of(question: str):
    """The flight a question confirms, or the sorted slots it asks, by the reader's rules alone (what the tests
    below check: the gate on questions about nothing, set on them in the traveller, has tests of its own, and the
    corpus tests read with both)."""
    reading = traveller().reader.read_by_rules(question)
    return reading.flight if reading.kind == "confirm" else sorted(reading.slots)


def slots_read(question: str) -> list[str] | None:
    """The slots the rules read in a question (sorted), or None when they read a confirmation."""
    reading = traveller().reader.read_by_rules(question)
    return sorted(reading.slots) if reading.kind == "ask" else None


def test_corpus_is_large_and_varied():
    rows = corpus()
    assert len(rows) >= 200 and len({q for _, _, q in rows}) == len(rows)
    kinds = {("confirm" if lab.startswith("confirm:") else lab) for _, lab, _ in rows}
    assert {"budget", "airline", "dates", "priority", "events", "route", "none", "confirm"} <= kinds
    assert sum("+" in lab for _, lab, _ in rows) >= 20  # questions about several slots at once


@pytest.mark.parametrize("split", ["dev", "heldout", *list(FILES)[1:]])
def test_reads_at_least_97_percent_of_each_split(split):
    t = traveller()
    rows = [(lab, q) for s, lab, q in corpus() if s == split]
    slots = [read(t, lab, q) for lab, q in rows if lab != "none" and not lab.startswith("confirm:")]
    none = [read(t, lab, q) for lab, q in rows if lab == "none"]
    confirm = [read(t, lab, q) for lab, q in rows if lab.startswith("confirm:")]
    assert slots or none or confirm, split
    for kind in (slots, none, confirm):  # (round44 holds questions about nothing only)
        assert not kind or sum(kind) / len(kind) >= 0.97, split


def test_reading_is_deterministic():
    a, b = traveller(), traveller()
    for _, _, q in corpus():
        assert a.ask(q) == b.ask(q)
    assert a.events == b.events


@pytest.mark.parametrize("question,slots", [
    ("May I ask your budget?", ["budget"]),  # 'may' the verb, not the month
    ("Can you fly in May?", ["dates"]),
    ("What do you mean?", []),  # not 'within your means'
    ("Is 2026-03-12 fine?", ["dates"]),  # a date, not a flight id
    ("What is your date of birth?", []),
    ("What is the best airline to fly from Lisbon to Oslo?", ["airline"]),  # states the route, asks the airline
    ("Are you flying from Lisbon?", ["route"]),
    ("budjet?", ["budget"]),  # a misspelt cue (one edit away) is read as the cue
    ("Which airlne?", ["airline"]),
    ("whats ur destinaton", ["route"]),
    ("Who carries the bags?", []),  # 'carries' is a word, not a misspelt 'carrier'
    ("Would you like a window seat on the airplane?", []),  # 'airplane' is two edits from 'airline'
    ("Has the airline budged on the fee?", []),  # 'budged' is a word one edit from 'budget'
    ("Is the expiry date of your card close?", []),
    ("any airline preference? also whats ur max price", ["airline", "budget"]),  # opens like a question
    ("When I searched, the cheapest fare was $280. Which airline do you prefer?", ["airline"]),  # a statement
    ("Which airline do you prefer? When I book, I'll send you the receipt", ["airline"]),  # 'when' + a subject
    ("Please tell me your budget. And what dates work for you", ["budget", "dates"]),  # no '?': all of it
])


def test_words_that_look_like_cues(question, slots):
    t = traveller()
    t.ask(question)
    assert t.events[-1]["type"] == "ask" and t.events[-1]["slots"] == slots



@pytest.mark.parametrize("question,slots", [
    # two wishes and a weak verb of choice ask both, unless an "or" sets one wish against another
    ("What's the highest fare you'd accept, and are your dates fixed or flexible?", ["budget", "dates"]),
    ("Would you accept flights on Borealis or Cirrus Lines, and on what dates?", ["airline", "dates"]),
    ("Can you switch your dates, or are they fixed? And what's your budget?", ["budget", "dates"]),
    # (a time of day is no date since round 13: "a morning or an evening departure" asks a preference the
    # traveller does not have)
    ("Which would suit you: a morning or an evening departure, and how much can you spend?", ["budget"]),
    ("Would you accept the later date, or switch airlines?", ["priority"]),
    ("Which would bother you less: paying over your limit, or flying with an airline you don't like?", ["priority"]),
    # a service offer covers its own part of the question only
    ("Should I set up a reminder, and which airline do you prefer?", ["airline"]),
    ("Do you want a reminder when online check-in opens, 24 hours before you leave?", []),
    # a layover or a trip's length is not the fare; "worth" weighs two wishes only with a trade in view
    ("Would you like to keep the layover under 2 hours?", []),
    ("Are you coming back in less than two weeks?", ["dates"]),
    ("I found a flight on Borealis on the 5th for $300. Is it worth booking now?", []),
    ("I found a fare $80 cheaper, but with another carrier. Is saving that money worth switching?", ["priority"]),
])
def test_rules_that_read_one_wish_do_not_swallow_the_others(question, slots):
    assert slots_read(question) == sorted(slots)


@pytest.mark.parametrize("question,slots", [
    # a stated clause is not read; "as for" still asks
    ("Since your budget is capped at 400, which airline do you prefer?", ["airline"]),
    ("As for the airline, any preference?", ["airline"]),
    # a slot question, then the priority: both; a head with a verb of choice, or not a question itself, is one choice
    ("What's your budget? And which matters more to you, the price or the date?", ["budget", "priority"]),
    ("Are you flexible on the date, and would you rather move it than pay more?", ["dates", "priority"]),
    ("Would you rather pay more or fly another day?", ["priority"]),
    ("Your budget, airline and date: which matters most?", ["priority"]),
    # a tag question reads a statement about the traveller, not a report of what was found
    ("I assume you're not tied to any particular airline or date. Is that fair?", ["airline", "dates"]),
    ("I found fares on Borealis and Cirrus Lines. Is that right?", []),
    ("Is that fair?", []),
    # an indirect question asks; "let me know when you're ready" does not
    ("I'd like to know your budget. Any airline?", ["airline", "budget"]),
    ("Let me know when you're ready. Which airline?", ["airline"]),
    # prices and dates of other things: a bag, parking, a hotel room, the weather; an event's tickets to buy
    ("How much is a second checked bag on this fare?", []),
    ("How much would you pay for a flight with a checked bag?", ["budget"]),
    ("What's the price of the flight, including a checked bag?", ["budget"]),
    ("Which hotel room do you want, and what date do you fly?", ["dates"]),
    ("Would you like me to book tickets for the festival?", []),
    ("Are you going to the festival, and do you have tickets?", ["events"]),
    ("If the only flight on your day is over budget, should I still pick it?", ["priority"]),
])
def test_round11_rules_read_what_they_should_and_no_more(question, slots):
    assert slots_read(question) == sorted(slots)


@pytest.mark.parametrize("question,slots", [
    # found in review: what round 11's rules must leave alone
    ("Is the price and the date more important than the airline?", ["priority"]),  # "and" inside the comparison
    ("Would you take a later date and a lower price over your preferred airline?", ["priority"]),
    ("Since the cheapest flight is on Borealis and the best date is on Aster Air, which would you pick?", ["priority"]),
    ("Since the festival is in March, should I avoid those dates?", ["events"]),  # a stated clause is context
    ("Since when do you need to be in Oslo, and what's your budget?", ["budget", "dates"]),
    ("Is there any room in your budget for a pricier fare?", ["budget"]),  # wiggle room is no hotel room
    ("What's your budget including the hotel?", ["budget"]),
    ("I found a Borealis flight for you at $280 on Friday. Is that right?", []),  # a report, not an assumption
    ("I can search Borealis for flights under your $400 budget. Shall I do so?", []),
    ("I assume you're flexible on dates. Does that seem fair?", ["dates"]),
    ("Are you planning to go to that fair?", ["events"]),
    ("Let me know when you\u2019re ready. What's your budget?", ["budget"]),  # a typographic apostrophe
    ("I found a Borealis fare at $290; let me know if you want it. Which dates work best?", ["dates"]),
    ("Would you rather fly within 2 days or save money?", ["priority"]),
    ("Would you rather take the flight that leaves first or the cheaper one?", ["priority"]),
    ("That leaves three carriers: which one do you prefer?", ["airline"]),
    ("Do you want to fly sooner or later than Friday, and what's your budget?", ["budget", "dates"]),
    ("How's the rest of your week going?", []),
    ("Do you want me to notify you if the fare drops, and what matters most to you?", ["priority"]),
    ("Should I book your tickets to avoid the festival crowds?", ["events"]),
    ("I found Aster Air at $450. Could you go a little higher on this fare?", ["budget"]),
    ("How much is too much for a flight with a checked bag?", ["budget"]),
    ("What's the cost of the flight with a meal included?", ["budget"]),
    ("What timing works best for you, and are there any events you'd like to avoid?", ["dates", "events"]),
    ("What are your travel dates, from and to?", ["dates"]),
    ("Would you like to travel in a month with better weather?", ["dates"]),
    ("How high on your list is flying Aster Air?", ["airline"]),
    ("Which airlines would you accept, and which matters most?", ["airline", "priority"]),
])
def test_round11_rules_leave_alone_what_they_should(question, slots):
    assert slots_read(question) == sorted(slots)


@pytest.mark.parametrize("question,reading", [
    # round 12: a flight named in a report is confirmed only by a question that commits or accepts
    ("EG55120 is $276. Is that affordable?", ["budget"]),
    ("Would you like to see the seat map for EG40877?", []),
    ("You said the date was non-negotiable - does that still hold if it means paying double?", ["priority"]),
    ("Shall I book EG55120?", "EG55120"),
    ("I'd like your go-ahead before I book flight bo45612. Shall I?", "BO45612"),  # a bare "Shall I?" reads back
    ("Sorry, H2 was released, so BO45612 is no longer held. Shall I book EG55120 instead ($276)?", "EG55120"),
    ("Is BO45612 at $320 fine with you?", "BO45612"),
    ("AS12301?", "AS12301"),  # the flight alone, or wanted, in the asking sentence itself
    ("Do you want CL12311?", "CL12311"),
    ("Shall I reserve CL12311 for you?", "CL12311"),
    ("Would you take AS77042 a day later if it saved you $80, or stay on the 5th with EG22019 at $260?",
     ["priority"]),  # a choice between two flights, not a confirmation of the first
    ("Which city is the conference in?", ["events", "route"]),
    ("Do you want me to add a checked bag?", []),
])
def test_round12_a_named_flight_is_a_confirmation_only_when_the_question_commits(question, reading):
    assert rules_reading_of(question) == reading


@pytest.mark.parametrize("question, reading", [
    # round 13's rules: what they read …
    ("To choose between DW77701 and CL12311 I need to know your price limit. What is the most you are willing to pay?",
     ["budget"]),  # how much to pay is the budget, whatever flights the report named
    ("What do you think, shall I pay for AS12301?", "AS12301"),  # … but "shall I" still asks to pay
    ("How about I go ahead and pay for AS12301?", "AS12301"),
    ("Please provide: (1) your preferred airline, (2) the dates you can fly, (3) which of date, budget and airline "
     "matters most.", ["airline", "dates", "priority"]),  # a numbered list: each item on its own
    ("Two things: (1) your budget, (2) whether price or date matters more.", ["budget", "priority"]),
    ("Please rank: 1) the date 2) the price 3) the airline.", ["priority"]),  # the lead asks the priority
    # (a plain list of flights names no trade-off since round 17: "which would you take?" asks nothing the
    # traveller knows; "the cheaper one is a day later: which?" asks the priority)
    ("Options: 1) AS12301 on 12 March for $275; 2) DW77701 on 13 March for $212. Which would you take?", []),
    ("Options: 1) AS12301 on 12 March for $275; 2) DW77701, cheaper, on 13 March. Which would you take?",
     ["priority"]),
    ("Do you know of any events in Oslo that might push up prices or reduce availability around 12 to 13 March?",
     ["events"]),  # the event's window, not the traveller's dates
    ("Is your trip tied to an event in Oslo, such as a festival or a conference, whose dates I should take into "
     "account?", ["events"]),
    ("Are there any festivals in Oslo, and when can you travel?", ["dates", "events"]),  # a question of its own
    ("Do you also need a return flight from Oslo back to Lisbon?", []),  # another journey
    ("When would you like to fly back?", []),
    ("What date do you want to fly, and do you need a round trip?", ["dates"]),
    ("Are you flying to Oslo?", ["route"]),
    ("Would you like me to book a hotel in Oslo as well?", []),  # a city something else is in
    ("Should I check the weather forecast in Oslo for when you arrive?", []),
    ("Do you prefer a morning or an evening departure?", []),  # a time of day, not a day
    ("Do you want a morning flight?", []),
    ("Which morning should I book for?", ["dates"]),
    ("Is Tuesday evening a good time to fly?", ["dates"]),
    ("Do you have a frequent flyer number for your preferred airline?", []),  # the number, not the choice
    ("Would you like me to tell you the price of a checked bag on Borealis?", []),
    ("Do you have frequent flyer status with a particular airline?", ["airline"]),
    ("Which airline's loyalty programme are you in?", ["airline"]),
])
def test_round13_rules_read_what_they_should_and_no_more(question, reading):
    assert rules_reading_of(question) == reading


@pytest.mark.parametrize("question, reading", [
    # round 14's rules: tool output quoted before the question is context, also before a dash …
    ('{"id": "DW77701", "price": 212}, {"id": "CL12311", "price": 265} -- before I choose among these, is there an '
     'upper limit on what you want to pay?', ["budget"]),
    ("AS12310 | Aster Air | $240 ; DW77701 | Dune Airways | $212 -- do you have a favourite carrier among these?",
     ["airline"]),
    ('{"id": "DW77701", "price": 212} -- shall I book it?', "DW77701"),  # … and a confirmation after it still is
    ("What's the most you'd be happy to pay?", ["budget"]),
    # the agent's own plan or report is no question
    ("Before I search Lisbon to Oslo, could you tell me the maximum you'd like to spend on the ticket?", ["budget"]),
    ("Before I search: what's your preferred carrier, and are your dates fixed?", ["airline", "dates"]),
    ("Now I have the route. Budget, airline, date: please tell me all three.", ["airline", "budget", "dates"]),
    ("I need your budget and dates.", ["budget", "dates"]),
    # a verb of preferring is no wish noun; the preferences are
    ("Which carrier do you prefer, and are you flexible on the travel date?", ["airline", "dates"]),
    ("Are you flexible on any of your preferences?", ["priority"]),
    # the price as shown, what a fare includes, an airline's app: not the traveller's wishes
    ("Do you know if the price shown is per person or per booking?", []),
    ("What's your budget per person?", ["budget"]),
    ("Does the Cirrus Lines fare include a checked bag?", []),
    ("Does your budget include bags?", ["budget"]),
    ("Do you want the Aster Air app link so you can check in on your phone?", []),
    ("Which airline's app do you want?", ["airline"]),
    ("Do you want Aster Air?", ["airline"]),
    ("Here are the results: DW77701 $212; CL12311 $265. Which of these flights do you want?", []),
    ("I see four carriers on this route. Do you prefer one of them?", ["airline"]),
    # the world's own events by name, and seasons
    ("You mentioned avoiding the Lantern Week in Oslo. Do you know its exact dates, or should I look them up?",
     ["events"]),
    ("Is there any celebration or season in Oslo that you'd like your trip to line up with, or to steer clear of?",
     ["events"]),
])
def test_round14_rules_read_what_they_should_and_no_more(question, reading):
    assert rules_reading_of(question) == reading


@pytest.mark.parametrize("question, reading", [
    # round 15's rules: a recap or a report before a dash is context when the question after it stands alone …
    ("You said your budget is $300 — and which airline do you prefer?", ["airline"]),
    ("You said the 13th and $300 — do you want a window or an aisle seat?", []),
    ("None of the flights on either day is under $300 — could you go a bit higher?", ["budget"]),
    # … not when it refers back, or when the part before the dash is the question's own start
    ('You mentioned wanting to "not break the bank" — what number would break it?', ["budget"]),
    ('You said the date was "non-negotiable" — does that still hold if it means paying double?', ["priority"]),
    ("Quick one: what's most important to you here — price, date, or airline?", ["priority"]),
    ("The fare you set (under €300) allows one cabin bag — do you want to add a checked one?", []),
    ("When you said 'the usual one', which carrier did you mean?", ["airline"]),  # a recap clause
    ("Just to be sure: when you said 'not too expensive', what's the most you'd pay?", ["budget"]),
    ("Before I pick a day: are there any festivals in Oslo around your trip?", ["events"]),
    # a wish traded for a saving, one of two wishes dropped or kept
    ("Would you be willing to fly a day later if it saves you $50?", ["priority"]),
    ("Would you pay $50 more if it saves you a day?", ["priority"]),
    ("Could you fly on the 14th if needed?", ["dates"]),
    ("If I can't find Aster Air on your dates, should I drop the airline or the date?", ["priority"]),
    ("Your $300 cap rules out Borealis on the 12th. Keep the cap or the date?", ["priority"]),
    ("Do you want me to keep the hold or release it?", []),
    ("How much does the date matter compared with price?", ["priority"]),
    # a cap or a limit is the budget, not a bag's; public holidays are events, the traveller's own holiday is not
    ("What exact number should I treat as your limit?", ["budget"]),
    ("Is there a cap on checked bags?", []),
    ("What is your budget, and are there holidays in Oslo that week?", ["budget", "events"]),
    ("Have you already fixed your holiday days, and if so, which ones?", ["dates"]),
    ("Are you going on holiday?", []),
    ("Should I search both days in one go, or one at a time?", []),  # the agent's search over the given days
    ("Which days should I search?", ["dates"]),
    # the flight the asking part leaves unnamed: the held seat it speaks of, else the one named last
    ("Your earlier hold on BO45612 was released. The seat I'm holding now is on AS12301. May I book it?", "AS12301"),
    ("H2 on BO45612 was released. Shall I pay for the held seat?", "AS12301"),
    ("DW77701 is $212. Shall I hold and book it?", "DW77701"),
])
def test_round15_rules_read_what_they_should_and_no_more(question, reading):
    assert rules_reading_of(question) == reading


@pytest.mark.parametrize("question, reading", [
    # round 16's rules: the agent's reason after its question is not read
    ("What's your exact budget limit, so I can tell whether the $345 Aster Air fare fits?", ["budget"]),
    ("Which airline do you prefer, so that I can narrow the search?", ["airline"]),
    # one wish given up for a better another
    ("Is the budget a hard limit, or would you go over it for a better date?", ["priority"]),
    ("Would you accept going over your budget in order to fly on your preferred date?", ["priority"]),
    ("Would going over your budget be OK?", ["budget"]),
    # a slot question, then "Also, if …" the priority
    ("Could you tell me your budget and your preferred airline? Also, if not everything fits, which matters most to "
     "you?", ["airline", "budget", "priority"]),
    # "preferred" before a wish names it; "prefer" as a verb and "preferences" choose or rank
    ("Do you have a preferred airline, and are you flexible on the date?", ["airline", "dates"]),
    ("To find the best flight, could you tell me your budget, your preferred airline, and which of the two dates "
     "you'd like to fly?", ["airline", "budget", "dates"]),
    ("Are you flexible on your preferences?", ["priority"]),
    ("On the wrong airline but cheaper: which should I prefer?", ["priority"]),
    # checking the weather, releasing a hold, adding a service: nothing the traveller knows
    ("Would you like me to check the weather in Oslo for your travel dates?", []),
    ("Do you want me to release hold H1 and search again?", []),
    ("Would you like me to add priority boarding for $15?", []),
])
def test_round16_rules_read_what_they_should_and_no_more(question, reading):
    assert rules_reading_of(question) == reading


@pytest.mark.parametrize("question, reading", [
    # round 17's rules: a request ending in "." is asked too ("Please share your budget.") …
    ("Please share your budget. Which airline do you prefer?", ["airline", "budget"]),
    ("Please share your budget and preferred airline. Also, if I can't satisfy both, which one matters more?",
     ["airline", "budget", "priority"]),
    ("Please provide your passport number. Which day works?", ["dates"]),
    # … slots asked before the priority, up to the last split that leaves the priority a question of its own
    ("Which airline do you prefer, and which days can you fly? And if the two conflict, which should win?",
     ["airline", "dates", "priority"]),
    ("Please let me know your budget and your acceptable travel dates, and how you'd rank those against each other "
     "and the airline.", ["budget", "dates", "priority"]),
    ("Which airline do you prefer, and how strict is that preference compared with price and date?",
     ["airline", "priority"]),
    ("Which matters more? The date or the price?", ["priority"]),
    ("Compared with yesterday, fares went up. What's your budget?", ["budget"]),
    # a list of the wishes, then "could you provide these?"; a list of flights, then "which one?"
    ("I'll need: • Your budget • Preferred airline • Travel date(s). Could you provide these?",
     ["airline", "budget", "dates"]),
    ("Here are the flights: AS12301 (Aster Air, $290), DW77701 (Dune Airways, $215). Which one would you like?", []),
    ("AS12301 is over your budget, while DW77701 is on another airline. Which would you take?", ["priority"]),
])
def test_round17_rules_read_what_they_should_and_no_more(question, reading):
    assert rules_reading_of(question) == reading


@pytest.mark.parametrize("question, reading", [
    # a review of rounds 13–17's rules found these read wrong; fixed, and kept as the rules' boundaries
    ('I got {"results": 4}. Which matters more if the difference is $40 — the date or the airline?', ["priority"]),
    ('[{"flight_id": "DW77701", "price": 212}] -- is there an upper limit on what you would pay?', ["budget"]),
    ('{"flight_id": "DW77701", "date": "2026-03-12", "price": 212}\n\nIs there an upper limit on what you would pay?',
     ["budget"]),
    ("| DW77701 | Dune Airways | $212 |\n| CL12311 | Cirrus Lines | $199 |\nIs there an upper limit on what you "
     "would pay?", ["budget"]),
    ("I have to confirm your travel dates. Please also share your budget.", ["budget", "dates"]),
    ("DW77701 is $212. What do you say, shall we pay for it?", "DW77701"),
    ("What do you think, should we pay for DW77701 now?", "DW77701"),
    ("To choose between DW77701 and CL12311, how high are you willing to go?", ["budget"]),
    ("Between DW77701 and CL12311, what is the maximum charge you would accept?", ["budget"]),
    ("Are you flexible on the date, or is there a specific day you'd prefer?", ["dates"]),
    ("Any events you are planning around, and the travel dates?", ["dates", "events"]),
    ("Is there a festival you want to avoid, and the departure city?", ["events", "route"]),
    ("Are you based in Lisbon?", ["route"]),
    ("Do you want to stick with Cirrus Lines even though their baggage fees are higher?", ["airline"]),
    ("Does the airline matter to you if you have a bag to check?", ["airline"]),
    ("Do you have a number of airlines in mind, or just one?", ["airline"]),
    ("Does Egret Air's meal service matter to you, or are you fine with buy-on-board snacks?", []),
    ("Would you pay a higher fare if it included a checked bag?", ["budget"]),
    ("Is the price quoted acceptable to you?", ["budget"]),
    ("Before I search Lisbon-Oslo flights, what is your budget?", ["budget"]),
    ("Great, before I search Lisbon to Oslo, what is your budget?", ["budget"]),
    ("I see four carriers. Do you prefer one of them for this trip?", ["airline"]),
    ("What is your budget, keeping in mind it is peak season?", ["budget"]),
    ("Are you flying round trip from Lisbon to Oslo on March 12?", ["dates"]),
    ("What time of day do you prefer to fly?", []),
    ("Please provide: 1. your preferred airline, 2. the dates you can fly, 3. which of date, budget and airline "
     "matters most?", ["airline", "dates", "priority"]),
    ("(1) Which airline do you prefer? (2) What dates work? Finally, which matters most to you?",
     ["airline", "dates", "priority"]),
    ("Do you prefer 1) DW77701, the cheapest at $212, or 2) BO45612 on Borealis on the 13th, which is more "
     "important to you?", ["priority"]),
])
def test_reviewed_rules_read_what_they_should(question, reading):
    assert rules_reading_of(question) == reading


@pytest.mark.parametrize("question, reading", [
    # round 18's rules
    ("Just to confirm, you're departing from Lisbon and arriving in Oslo?", ["route"]),  # the route, no date
    ("When are you departing from Lisbon?", ["dates"]),
    ("Are there festivals in Oslo in March that might push prices up?", ["events"]),  # the event's prices
    ("Is there a festival that week, and what is your budget?", ["budget", "events"]),
    ("Which airline do you like, and would you still want it if it meant paying more?", ["airline", "priority"]),
    ("Your budget wasn't in the message — what's the limit?", ["budget"]),
    ("I found 4 flights: DW77701 $245, CL12311 $318, EG40200 $289. Which of these do you want?", []),
    ("Do you know what the weather will be like in Oslo in March?", []),
    ("Would you like to travel in a month with better weather?", ["dates"]),
    ("What time would you like to arrive in Oslo?", []),  # a time of day
    ("What time frame are you looking at?", ["dates"]),
    ("Got it, Aster Air. Do you have an Aster Air loyalty number?", []),
])
def test_round18_rules_read_what_they_should_and_no_more(question, reading):
    assert rules_reading_of(question) == reading


def test_every_event_of_the_travel_world_is_read_as_an_event_by_its_name():
    from importlib import import_module

    generator = import_module(Traveller.__module__.rsplit(".", 1)[0] + ".generator")
    t = traveller()
    for name in generator.EVENTS:  # the lexicon names those whose words hold no other cue
        t.ask(f"Should I steer clear of the {name}?")
        assert t.events[-1]["slots"] == ["events"], name


def test_letting_a_hold_go_is_not_a_confirmation():
    t = traveller()
    for question in ("Shall I release the held seat?", "Should I let go of the hold first?"):
        t.ask(question)
        assert t.events[-1]["type"] == "ask", question
    for question in ("Want me to seal the deal on the Aster Air seat I've been holding?",
                     "Shall I book the held seat? It comes with free cancellation.",  # the hold is not cancelled
                     "Shall I go ahead and book the held seat before prices drop?"):
        t.ask(question)
        assert t.events[-1] == {"type": "confirm", "object": "AS12301", "answer": "yes"}, question


def test_a_made_up_flight_is_refused_and_a_second_active_hold_makes_the_held_seat_ambiguous():
    t = traveller()
    assert t.ask("Shall I pay for ZZ99999?") == "No."
    assert t.events[-1] == {"type": "confirm", "object": "ZZ99999", "answer": "no"}
    t.reader.holds["H3"] = {"flight": "DW77701", "status": "active", "created": 3}
    t.ask("Shall I pay for the held seat?")
    assert t.events[-1]["type"] == "ask"  # two seats held: which one? Not a confirmation


#: sha256 of the traveller's readings of the whole corpus (the files above, in order) under each READER_VERSION
READINGS_DIGEST = {1: "88ac719fbf65008cd05635df7bf69c1dfefe3f7db5aaeffe8ad694fd03993879",
                   2: "a9ac36451894e6e390e6a31749ab45419a9e7679f7d6a3c298a6552d5455dfc8",
                   3: "6fd06bf6cdbe1f7d1b9234ada0c3b6eebc9cdf9d92931882c451211a9ff19b7b",
                   4: "08ba126d5ecd24b227f4cd97077a6daec4befa216b8b5a0464c673195d2acef8",
                   5: "035150204208ab9bd126e9817ed8ee8aa195267ebfdf0aeebdf9b3ef7c767948",
                   6: "4c9aa48e11da19601ef2169b757e22d3530d5dc46bcdd329f140d99f50a9c4c5",
                   7: "fe59451df8d2b808a06b00d8199b6b3b11cc9b84be73ed1395d6922da89e3008",
                   8: "4e8f6e68a7498bc2ada19c783e49cc25c7cda9caa651c1c794f3301ad6655583",
                   9: "32fb4e7ee3790a4340d43864c07d5a7ff4143aac6ecf4c2c93d759019fa916a2",
                   10: "ed74bd7aaddbf45bc3fe4b67103cce9b448e6ffe4b516364e555f29eea2a7bb6",
                   11: "5579d7f4e102b139c1eafef1fe578ca3ff626daf806d8edb3f56c420c283d7bf",
                   12: "5f66ee649539822b95b5b5c02c1d358e1a7bc7c3543a6c27215ec2bab6fa7129",
                   13: "af25455b9226fcb653ca5a30f7f195909b41de440de63c1819f0a504ea56d907",
                   14: "5187923441e9efa72f962c2d5dea7892c9733f08b587cb4ed94511cfaf297b74",
                   15: "5187923441e9efa72f962c2d5dea7892c9733f08b587cb4ed94511cfaf297b74",
                   16: "b956d4172159880c6c5a2884fe7c5aba1b3e9c5e7f6a6baf093f9e25ecb4c6e9",
                   17: "05cff1127ff9d7d12f9517adf757a72cd9ff25f28885e5eb2b98b7b3923bad9f",
                   18: "7465f700c5abc034d6c81acc2d399a5d386412ba2be1d6380585e2701e5bac65",
                   19: "6aff0698b6f46f529a92296c7ae012f2ca2bb9e835f8192e6347cb24c9cfa82c",
                   20: "066fa9de498812165d57363c5f0a51de27f0a7e5b679e17e48b9d6ed174f2215",
                   21: "9cb90a9b8c2f75186dbe1de07d810ce6e37df756c66e9419c0d3a18e0bbe11f5",
                   22: "d2155faabd72c3432ff8215053a1472d80732546f99b37a2ee28e6036e2557b6",
                   23: "44d9bba166d1e8c4a3f0e82ce883661fe5278dee2f4857ebd7e6162416759bd1",
                   24: "7a0576aecc2b95e5d328f19a7a0d81123f6514542ab7676ab5f5859f3c2a0054",
                   25: "33819271934677914f36e8e6c09363c5c56ff7d2563c014c178f2ab77e6f1120",
                   26: "33819271934677914f36e8e6c09363c5c56ff7d2563c014c178f2ab77e6f1120",
                   27: "8c9fac57b12a2e208868d941cb56b1e5fb8793e322fcb9e1c69737dc6df04a95",
                   28: "ec92388a3cc61e70fb3969abc6898eb1f75b5accfaa6106173fc512803891539",
                   29: "6580f754e98264f9863e25ff5ad2d2a948e40d5ef4c2cc822ec9993603f1951b",
                   30: "f36e5f65e8fc4ef0d57c4b68492857fe3134d84f18995230c82c7218908c66b9",
                   31: "635c20e544bdd3b8ebbc1286fafc1b8dab847a246224555395de15051c5faa22",
                   32: "d4be2d2be2aeac4322ce45547e1a0622b1ab7e1ece230f7e94116389bc3cb839",
                   33: "b64141980f5418c759f85c70f5030bcffd49a2f3fa9374df674a7b27f4787ced"}


def test_a_change_in_the_readings_comes_with_a_new_reader_version():
    """The reader's version is in every travel run's identity (a folder made under another is not resumed);
    this fails when a reading changes without it."""
    import hashlib
    import json
    from importlib import import_module

    version = import_module(Traveller.__module__).READER_VERSION
    readings = [(question, reading_of(question)) for _, _, question in corpus()]
    digest = hashlib.sha256(json.dumps(readings, ensure_ascii=False).encode()).hexdigest()
    assert READINGS_DIGEST.get(version) == digest, (
        f"the traveller reads the corpus differently than READER_VERSION {version} did: bump READER_VERSION in "
        f"tool_suites/travel/user.py and record {digest} for it here (only the corpus grew: record the digest)")
