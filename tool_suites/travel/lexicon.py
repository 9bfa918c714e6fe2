"""The traveller's lexicon: how a question's words become stems, and the cue words the reader's rules
(:mod:`.reading`) are written over — one set a concept, stemmed once at import."""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("english")
TOKEN = re.compile(r"[$£€]|[a-z]+|\d+")
SENTENCE = re.compile(r"(?<=[.?!])(?<![\s:(]\d\.)(?<!^\d\.)\s+")  # not after a list's "1."
#: tool output quoted before the question ('{"id": "DW77701", "price": 212} -- is there an upper limit …?', a JSON
#: list, a |-table, then a dash, a line break or a capital): the output ends its sentence
QUOTED_OUTPUT = re.compile(r"([}\]|][^A-Za-z{}\[\]|]*?)(?:\s*(?:--|\u2014|\u2013|\s-)\s*|\s*\n\s*|\s+(?=[A-Z]))"
                           r"(?=[^{}\[\]|]*$)")
#: a question is read clause by clause (cut at , ; : ? ! and or "as well as" plus), in parts: the part of
#: a question a service offer covers, up to the next "and"/"or"/";" (its commas included: "a reminder
#: when check-in opens, 24 hours before you leave?" offers one service)
OFFER = re.compile(r"[;?!]|\b(?:and|or|as well as|plus)\b")
#: the clauses of one such part
PART = re.compile(r"[,:]")
ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")  # "is 2026-03-12 fine?" asks about a date
#: a sentence wishing the traveller well ("I hope your day is going well") is not a question
WELL_WISH = re.compile(r"\s*(?:i\s+)?(?:hope|wish)\b|\s*(?:have|enjoy)\s+(?:a|your)\b|\s*thanks?\b", re.I)
#: the trip named as the agent's purpose ("To book your flight from Lisbon to Oslo I will need …"): stated, not asked
ROUTE_PURPOSE = re.compile(r"(?:^|(?<=[.!?]\s))\s*to\s+(?:book|find|search\s+for|get|reserve)\s+(?:you\s+)?"
                           r"(?:your|a|the)\s+"
                           r"(?:best\s+|right\s+)?"
                           r"(?:flight\s+from\s+\w+\s+to\s+\w+|\w+\s*(?:\s+to\s+|\u2192|\u2013|-)\s*\w+\s+flight"
                           # "To find the best Borealis flight for you, …" (a capitalised name, never a flight id)
                           r"|(?-i:[A-Z][a-z]+)(?:\s+(?-i:[A-Z][a-z]+))?\s+flight(?:\s+for\s+you)?)\b,?",
                           re.I)
#: a sentence restating what the traveller wants ("You want to fly Lisbon to Oslo."): context when nothing ends in "?"
RECAP = re.compile(r"\s*you(?:'re|\s+are)?\s+(?:want|said|mentioned|need|would\s+like|wish|flying)\b[^?]*\.\s*$", re.I)
#: the agent's offer to book the trip ("I'd be happy to help you book a flight from Lisbon to Oslo."): stated
HELP_ROUTE = re.compile(r"\bhelp\s+(?:you\s+)?(?:to\s+)?(?:book|find)\s+(?:a|your|the)\s+flight\s+from\s+\w+\s+to\s+\w+"
                        r"\b(?!\s*,?\s*or\b)", re.I)
#: "departure and arrival cities" names the route (not a departure date)
ROUTE_PAIR = re.compile(r"\b(?:departure|arrival|origin|destination)\s+(?:and|or|&|/)\s+"
                        r"(?:departure|arrival|origin|destination)\s+(?:cit(?:y|ies)|airports?|points?)\b", re.I)
#: a sentence that opens like a question asks, with or without its "?" ("also whats ur max price")
QUESTION_OPENER = re.compile(r"\s*(?:(?:also|and|plus|oh|ok|okay)\W+)?(?:what|whats|which|when|where|how|who)\b"
                             r"(?!\s+(?:i|we|you|it|they)\b|\s+(?:i|we|you|they)')", re.I)  # not "when you're ready"
#: a sentence that asks indirectly ("I'd like to know which airlines are on the table for you.")
#: (opening the sentence, after a stated clause; not "let me know when you're ready")
INDIRECT = re.compile(r"\s*(?:(?:please|so|now|also|and)\W+)?(?:i(?:'d| would)?\s+(?:like|need|want|love)\s+to\s+know|"
                      r"(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?)?"
                      r"(?:let me know|tell me|share|provide|give me|send me|confirm))\s+"
                      r"(?:what|which|when|where|how|who|whether|if|your|the)\b"
                      r"(?!\s+(?:you|it|that|we|this)(?:'re|'ve|'s|\s+are|\s+have|\s+is)\b)", re.I)
#: pictographs and emoji ("Great! ✈️ Could you tell me …"): no slot's meaning, and they hide a sentence's opening
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\uFE0F\u200D]+")
#: a lead-in before a colon ("A couple of quick questions: …", "One more thing: …")
LEAD_IN = re.compile(r"[^:?]{1,60}:\s*(?=\S)")
#: a request for a list of details ("Please provide the following details: travel date, budget, …"): it asks the
#: traveller, though it names no "you"
DETAILS_REQUEST = re.compile(r"\s*(?:please\W+)?(?:(?:could|can|would)\s+you\s+(?:please\s+)?)?"
                             r"(?:provide|share|give me|send me|tell me|list)\s+(?:me\s+)?"
                             r"(?:the\s+following|these|a\s+few|some|the)?\s*(?:details|information|info)\b"
                             # "I'll need your travel date(s), your budget, …, and which of these matters most …."
                             r"|\s*i(?:'ll|\s+will)?\s+need\s+(?:your|the\s+following|a\s+few|some)\b", re.I)
#: a recap's opening ("When you said 'the usual one', …"): what the traveller said, no date asked
_RECAPPED = r"(?:when|as|like)\s+you\s+(?:said|say|mentioned|mention|told\s+me|wrote)"
RECAP_WHEN = re.compile(rf"\b{_RECAPPED}\b", re.I)
#: a clause that states what is known before asking ("Since your budget is capped at 400, ..."): not read
STATED = re.compile(r"(?:^|(?<=[.?!:]))\s*(?:(?:ok|okay|great|perfect|thanks|got it|right)\s*[,!\u2014-]\s*)?"
                    # "Given your $300 budget, …" (not "given" alone)
                    r"(?:(?:since(?!\s+when)|given(?:\s+that|(?=\s+(?:your|the)\b))|now that|seeing that|seeing as|"
                    # "When you said 'the usual one', which carrier did you mean?": a recap
                    rf"{_RECAPPED})\b[^,.?!:]*|"
                    # "For your trip on 2026-03-12, …": the trip as given
                    r"for\s+(?:your|the|this)\s+(?:trip|flight|journey)\b[^,.?!:]*|"
                    # "Before I search Lisbon to Oslo, …", "Before I pick a day: …": the agent's own plan
                    r"(?:before|while|once|after|so that)\s+(?:i|we)\b(?:[^,.?!:;\u2014\u2013-]|\b-\b)*)[,:]", re.I)
#: wishes ranked with ">" ("date > budget > airline, correct?")
_WISH = r"(?:dates?|budget|price|airline|carrier)"
RANKED = re.compile(rf"\b{_WISH}\s*(?:>|\u203a|\u2192)\s*{_WISH}\b", re.I)
#: a short tag question after a statement: "Is that fair?", "Does that sound right?", "Correct?"
TAG_QUESTION = re.compile(r"\W*(?:(?:is|does|would|was)\s+(?:that|this|it)\s+(?:(?:seem|sound)s?\s+)?)?"
                          r"(?:fair|right|correct|true|accurate)\W*$", re.I)
#: a question that asks on its own: opens with a question word or an auxiliary ("What's the maximum you'd pay")
QUESTION_START = re.compile(r"\s*(?:(?:so|also|and)\W+)?(?:what|whats|which|how|when|where|who|do|does|"
                            r"did|are|is|would|could|can|will|have|any)\b", re.I)
#: a dash between a statement and a question of its own ("You said your budget is $300 — and which airline?")
DASH = re.compile(r"\s+(?:--|\u2014|\u2013)\s+")
#: a question's opening after a dash: an interrogative or an auxiliary ("— could you go a bit higher?")
YES_NO_START = re.compile(r"\s*(?:(?:so|also|and|but)\W+)?(?:what|whats|which|how|when|where|who|do|does|did|are|is|"
                          r"would|could|can|will|should|shall|may|might)\b", re.I)
#: a sentence reporting what the agent has or did ("Now I have the route."): context in a message without "?"
REPORT = re.compile(r"\s*(?:(?:now|ok|okay|so|great|thanks|right)\W+)?(?:i|we)(?:'ve|\s+have|\s+found|\s+got|"
                    r"\s+searched|\s+checked|\s+looked|\s+see)\b", re.I)
#: a numbered list's marker: "(1) your airline, (2) your dates", "1) … 2) …", "1. … 2. …" (SENTENCE does not
#: split after a marker)
NUMBERED = re.compile(r"(?:^|(?<=[\s:;,]))(?:\(([1-9a-eA-E])\)|([1-9])[).]|([a-eA-E])\))(?=\s)")  # or "(a) …, (b) …"
HOLD_ID = re.compile(r"\b(H\d+)\b", re.I)
#: "hold luggage" is checked luggage, no seat on hold ("Will you need hold luggage for your trip?")
HOLD_LUGGAGE = re.compile(r"\bhold(?=\s+(?:luggage|baggage|bags?)\b)", re.I)
#: a flight id the world does not have (a made-up one) is still a confirmation: of that id, refused
ANY_FLIGHT = re.compile(r"\b([A-Z]{2}\d{4,6})(?![-\d])")


#: words whose stem would collide with a cue of another meaning (``expenses`` → ``expens`` as ``expensive``)
UNSTEMMED = {"expense": "expense", "expenses": "expense", "timing": "timing"}


#: the cue words a misspelling is read as (``budjet``, ``airlne``): long words with few ordinary English
#: words one edit away (``carrier`` is left out: ``carries``); those few are :data:`NOT_MISSPELT`
SPELLED = ("budget", "airline", "destination", "priority")
#: English words one edit from a cue of :data:`SPELLED` ("has the airline budged?", "a receding hairline")
NOT_MISSPELT = frozenset({"budged", "budges", "budgie", "hairline"})


def spelled(word: str) -> str:
    """The cue of :data:`SPELLED` one edit (a letter changed, added, dropped, or two swapped) from a
    word of six letters or more, else the word."""
    if len(word) < 6 or word in SPELLED or word in NOT_MISSPELT:
        return word
    return next((cue for cue in SPELLED if _one_edit(word, cue)), word)


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` is ``b`` with one letter changed, added or dropped, or two neighbours swapped."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i:i + 2] == b[i:i + 2][::-1] and a[i + 2:] == b[i + 2:])
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[i + 1:] == shorter[i:]


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    return UNSTEMMED.get(word) or _STEMMER.stemWord(spelled(word))


def stems(text: str) -> list[str]:
    """The text's stems, with the two-word compounds of :data:`COMPOUNDS` collapsed to one token."""
    text = ROUTE_PAIR.sub("origin and destination", ISO_DATE.sub(" date ", text.lower()))
    words = [stem(t) for t in TOKEN.findall(text)]
    out: list[str] = []
    i = 0
    while i < len(words):
        joined = COMPOUNDS.get((words[i], words[i + 1])) if i + 1 < len(words) else None
        out.append(joined or words[i])
        i += 2 if joined else 1
    return out


# cues are written as words; they are stemmed once at import
def _cue(*words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words)


BUDGET = _cue("budget", "price", "pricey", "cost", "costly", "spend", "afford", "affordable", "money", "expensive",
              "cheap", "cheaper", "cheapest", "pricier", "priciest", "costlier", "fare", "pay", "dollar", "dollars", "euro", "euros", "$", "amount",
              "charge", "funds", "wallet", "pricing", "spending", "ceiling", "cap", "£", "€")
AIRLINE = _cue("airline", "airlines", "carrier", "carriers", "airway", "airways", "operator", "company", "alliance",
               "oneworld", "skyteam")
DATES = _cue("date", "dates", "day", "days", "when", "weekend", "weekday", "weekdays", "week", "timing", "month", "schedule", "soon", "earliest",
             "latest", "early", "late", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
             "january", "february", "march", "april", "june", "july", "august", "september", "october",
             "november", "december", "tomorrow", "tonight", "depart", "departure", "leave", "morning", "afternoon",
             "evening")
ROUTE = _cue("origin", "destination", "route")
#: times of day: a date cue ("which morning?"), or a time preference ("a morning or an evening departure?")
TIMES_OF_DAY = _cue("morning", "afternoon", "evening", "night")
#: the other words of a question that only checks the trip's city ("Just to be sure, you're flying to Oslo, right?")
ROUTE_CHECK = _cue("you", "are", "re", "is", "your", "the", "a", "just", "to", "from", "confirm", "check", "double",
                   "make", "sure", "correct", "right", "that", "so", "ok", "okay", "and", "it", "this", "we", "be",
                   "will", "do", "does", "still", "want", "wish", "plan", "planning", "going", "need", "would", "like",
                   "can", "i", "am", "in", "or", "not", "of", "out", "city", "cities", "airport", "there")
#: places that are the trip's only next to a verb of travel ("which city are you flying to")
PLACES = _cue("city", "cities", "airport", "airports", "place")
EVENTS = _cue("event", "events", "festival", "festivals", "conference", "convention", "concert", "fair", "exhibition",
              "expo", "marathon", "celebration", "happening", "happenings", "parade", "crowded", "crowds", "host",
              "hosting", "hosts", "carnival", "oktoberfest", "tournament", "olympics", "championship", "gig", "season", "seasons", "holiday", "holidays",
              # the travel world's own events (generator.EVENTS) whose names hold no other cue
              "lantern", "regatta")
TRAVEL_VERBS = _cue("go", "going", "fly", "flying", "head", "headed", "heading", "travel", "travelling", "traveling",
                    "start", "starting", "leave", "leaving", "depart", "departing", "trip", "journey", "bound", "to",
                    "from", "land", "arrive", "flight")
#: single words that make a question about how the wishes rank
PRIORITY = _cue("priority", "priorities", "prioritise", "prioritize", "important", "importance", "rank", "ranking",
                "precedence", "trade", "tradeoff", "compromise", "sacrifice", "outrank", "outweigh", "negotiable",
                "conflict", "clash", "versus", "vs", "relax", "criterion", "criteria", "consideration", "weigh",
                "optimise", "optimize", "forgo", "loosen", "dealbreaker", "dealbreakers")
#: priority words that, next to a city event, are about the event ("dates that clash with a festival")
EVENT_CLASH = _cue("conflict", "clash")
#: "prioritise" with one wish named asks about that wish ("an airline you'd like me to prioritise")
PRIORITISE = _cue("prioritise", "prioritize", "prioritising", "prioritizing")
#: nouns for the wishes as such ("which requirement is the most flexible")
WISH_NOUNS = _cue("requirement", "requirements", "wish", "wishes", "preference", "preferences", "constraint",
                  "constraints", "rule", "rules", "condition", "conditions")
#: pairs of neighbouring stems that do the same
PRIORITY_PAIRS = {(stem(a), stem(b)) for a, b in (
    ("matters", "most"), ("matters", "more"), ("matter", "most"), ("matter", "more"), ("care", "more"),
    ("care", "most"), ("give", "up"), ("comes", "first"), ("come", "first"), ("comes", "second"),
    ("come", "second"), ("comes", "last"), ("stack", "up"), ("can", "bend"), ("be", "bent"), ("be", "relaxed"),
    ("least", "important"), ("top", "consideration"), ("order", "your"), ("order", "of"), ("what", "wins"),
    ("should", "beat"), ("deal", "breaker"), ("must", "have"), ("absolutely", "need"), ("need", "most"),
    ("put", "first"), ("drop", "first"), ("matters", "least"), ("matter", "least"), ("care", "least"),
    ("value", "more"), ("value", "most"), ("hard", "requirement"),
    ("hard", "constraint"), ("about", "most"), ("must", "give"), ("should", "give"), ("can", "give"),
    ("mind", "least"), ("mind", "most"), ("in", "exchange"), ("in", "return"), ("push", "comes"),
    ("want", "most"), ("like", "most"),
)}
#: two-word compounds whose meaning is not their words' (a trade fair is an event, priority boarding a
#: service, a budget carrier an airline, paying by card a method, a departure city the origin)
COMPOUNDS = {(stem(a), stem(b)): stem(c) for a, b, c in (
    ("trade", "fair", "fair"), ("trade", "show", "fair"), ("priority", "boarding", "service"),
    ("priority", "lane", "service"), ("budget", "carrier", "carrier"), ("budget", "carriers", "carrier"),
    ("budget", "airline", "airline"), ("budget", "airlines", "airline"), ("pay", "by", "method"),
    ("pay", "with", "method"), ("departure", "city", "origin"), ("departure", "airport", "origin"),
    ("home", "airport", "origin"), ("starting", "airport", "origin"), ("starting", "point", "origin"),
    ("good", "morning", "greeting"), ("good", "afternoon", "greeting"), ("good", "evening", "greeting"),
    ("nice", "day", "greeting"), ("good", "day", "greeting"), ("great", "day", "greeting"),
    ("price", "alert", "service"), ("price", "alerts", "service"), ("fare", "alert", "service"),
    ("arrival", "city", "destination"), ("arrival", "airport", "destination"),
    ("taking", "place", "happening"), ("take", "place", "happening"), ("with", "company", "companion"),
    ("date", "format", "format"), ("time", "zone", "format"), ("cost", "carrier", "carrier"),
    ("cost", "airline", "airline"), ("cost", "operator", "operator"), ("football", "match", "event"),
    ("soccer", "match", "event"), ("football", "game", "event"), ("rugby", "match", "event"),
    ("cricket", "match", "event"), ("basketball", "game", "event"), ("baseball", "game", "event"),
    ("expiry", "date", "expiry"), ("expiration", "date", "expiry"),
    ("fair", "game", "correct"), ("fair", "enough", "correct"), ("check", "in", "checkin"),
    ("e", "ticket", "eticket"), ("big", "match", "event"), ("big", "game", "event"), ("the", "bank", "budget"),
)}
#: when a question names two wishes, these words make it a choice between them
CHOICE = _cue("keep", "choose", "win", "rather", "beat", "pick", "sacrifice", "first", "favour", "favor",
              "value")
#: weaker verbs of choice: a choice only when an "or" in the same sentence has a different wish on each side
#: ("would you accept the later date, or switch airlines?"; not "which airlines would you accept, and ...?")
SWITCH = _cue("switch", "accept", "move", "shift", "change")
#: a comparative after "which would": "which would bother you less: X, or Y?"
LESS_MORE = _cue("less", "more", "least", "most")
#: a trade word that makes "worth" weigh two wishes ("$80 cheaper, but with another carrier: worth it?")
WORTH_TRADE = _cue("another", "different", "other", "cheaper", "switch", "switching", "but", "instead", "extra")
#: a time or weight after "keep … under": a layover or a bag, not the fare
NOT_FARE_UNITS = _cue("hour", "hours", "minute", "minutes", "kg", "kilos", "stop", "stops", "layover", "layovers")
#: travel documents: their dates (an expiry, "valid for six months") are not the trip's
DOCUMENTS = _cue("passport", "passports", "visa", "visas", "expiry", "expire", "expires", "validity", "valid")
#: things with dates or prices of their own: a hotel's check-in date, the forecast for arrival day, the
#: price of parking or of an extra bag are not the trip's dates or fare
WEATHER = _cue("forecast", "forecasts")
#: after "weather" these make it a weather question ("a short weather summary for your travel week")
WEATHER_NOUNS = _cue("summary", "report", "update", "updates", "outlook")
LODGING = _cue("hotel", "hotels", "accommodation", "hostel", "airbnb", "checkin")
#: what a price is of when it is the flight's ("the cost of the flight with a meal included")
FLIGHT_NOUNS = _cue("flight", "flights", "ticket", "tickets", "fare", "fares", "trip", "seat", "journey")
EXTRAS = _cue("parking", "bag", "bags", "baggage", "luggage", "insurance", "upgrade", "upgrades", "lounge", "wifi",
              "meal", "meals", "hotel", "hotels", "taxi", "transfer", "car", "rental", "tour", "tours", "refund",
              "refunds", "cancellation", "allowance", "service", "services", "boarding", "train", "bus", "metro",
              "shuttle", "transport", "transportation")
#: a seat and its kinds: a thing the question's own "it" may stand for ("a seat with extra legroom if it is free?")
SEATING = _cue("seat", "seats", "legroom", "aisle", "window")
#: a city event's tickets to buy: an offer of a service, not a question about the trip's purpose
EVENT_TICKETS = _cue("ticket", "tickets", "pass", "passes", "admission", "entry")
BUYING = _cue("buy", "purchase", "book", "order", "reserve")
#: a tag question after a statement of wishes asks them when the statement is about the traveller: a verb of
#: assuming, or "you" as a subject ("I assume you're …", "you don't mind …"), not a report ("a flight for you")
ASSUMING = _cue("assume", "understand", "gather", "suppose", "guess", "presume", "reckon")
NOT_SUBJECT = _cue("for", "to", "with", "at", "of", "thank", "by", "from")
#: a verb of letting a hold go: "should I release the held seat?" is not a confirmation
RELEASE = _cue("release", "cancel", "drop", "abandon", "void")
#: what "everything else" / "all else" is: with a verb of outranking, one wish over the rest
ELSE_WORDS = _cue("everything", "anything", "all")
#: with a condition and two wishes, these make it a trade-off ("if the cheapest were on another airline, still?")
TRADE_OFF = _cue("still", "different", "another", "instead")
#: "important" with one wish and no comparison asks that wish, not the ranking
IMPORTANT = _cue("important", "importance")
COMPARATIVE = _cue("more", "most", "less", "least", "than", "over", "versus", "vs")
#: pairs that say a wish is a must or wanted most: with one wish named they ask that wish ("what date do you
#: absolutely need?", "which airline do you want most?"), with none or two the priority
MUST_PAIRS = {(stem(a), stem(b)) for a, b in (("absolutely", "need"), ("must", "have"), ("need", "most"),
                                              ("want", "most"), ("like", "most"))}
#: luggage: "how much does your bag weigh?" weighs a bag, not the wishes
LUGGAGE = _cue("bag", "bags", "luggage", "baggage", "suitcase", "suitcases", "kg", "kilos")
#: verbs of letting a wish go: with "which"/"what" the question asks which wish ranks lowest
DROP = _cue("drop", "skip", "lose", "bend", "abandon", "break")
#: after "which" these make it a pronoun ("which should I prefer?"), not a slot's determiner ("which airline")
#: verbs that rank one wish above another ("should price beat the airline?", "which should win?")
OUTRANK = _cue("beat", "win", "trump", "outrank", "override")
#: verbs of a purpose clause: a wish given up "to keep" another ("a higher fare to keep your airline")
#: verbs of the agent's own search, and quantifiers over the dates already given: "should I search both days in
#: one go?" asks how to search ("which days should I search?" still asks the dates)
SEARCHING = _cue("search", "check", "look", "compare", "scan", "query")
QUANTIFIERS = _cue("both", "either", "each", "all", "every")
#: words that name a trade-off between listed options ("the cheapest is on Borealis, the best date on Aster Air:
#: which?"); a plain list of flights and "which one would you like?" names none
TRADE_NAMED = _cue("over", "while", "whereas", "however", "cheapest", "best", "better", "earlier", "later", "lower",
                   "higher", "pricier", "worse")
#: a clause after an event asking about the event itself ("…, or is it a different week?")
EVENT_SUBJECT = re.compile(r"\W*(?:is|was|does|will)\s+(?:it|that|this)\b", re.I)
#: a short heading before a colon and the question under it ("Lantern Week: what are the start and end dates?")
EVENT_HEADING = re.compile(r"\s*([^:?!.]{1,60}):\s*(\S.*)", re.S)
#: words by which a clause after an event's gives the event's own dates or place ("… that might reduce
#: availability around 12 to 13 March", "whose dates I should take into account"; not "and the travel dates?")
EVENT_BACK = _cue("it", "its", "whose", "their", "that", "which", "around", "during", "then", "only", "first", "last",
                  "them",
                  # its span's other end: "when Lantern Week starts and ends in March?"
                  "ends", "starts", "begins", "finishes", "runs")
#: the flights themselves: "which of these flights do you want?" refers back to no wish ("for this trip" may)
FLIGHT_ONLY = _cue("flight", "flights", "ticket", "tickets")
#: verbs of giving details: "could you provide these?" after a list of the wishes asks them
GIVING = _cue("provide", "share", "tell", "give", "send", "fill", "supply")
#: a saving that a condition offers for another wish ("a day later if it saves you $50")
SAVING = _cue("save", "saves", "saving", "cheaper", "less", "lower")
#: verbs that give up or keep one wish of two ("should I drop the airline or the date?", "keep the cap or the date?")
DROP_OR_KEEP = _cue("drop", "skip", "lose", "bend", "relax", "sacrifice", "keep", "loosen", "stick")
PURPOSE = _cue("keep", "get", "stay", "save", "have")
#: "would you go over it for a better date?": one wish given up for a better another
BETTER = _cue("better", "cheaper", "lower", "earlier", "nicer", "preferred")
#: the agent's reason after its question ("… so I can tell whether the $345 Aster Air fare fits?"): not read
#: (and what it will do meanwhile: "… keep hold H1 active while I check more dates?")
#: (or the condition it states: "is any day in that window fine, as long as it is outside the Lantern Week?")
PURPOSE_CLAUSE = re.compile(r",?\s+(?:so(?:\s+that)?\s+(?:i|we)\s+(?:can|could|may|know|see)"
                            r"|(?:while|whilst)\s+(?:i|we)|(?:as|so)\s+long\s+as"
                            # "Should I release hold H1 since you'd rather fly Borealis?": a reason, stated
                            r"|(?:since|because)\s+(?:you|your))\b(?:(?!,?\s+or\b)[^.?!:])*", re.I)
#: what the agent may be asked to do with a flight or hold other than book it ("do you want me to keep hold H1?")
OTHER_ACTS = _cue("keep", "check", "search", "look", "wait", "find", "compare", "release", "cancel", "do", "leave",
                  "put", "place", "hold")  # ("Do you want me to put a new hold on BO45612?")
WHICH_PRONOUN = _cue("should", "would", "do", "one", "is", "of", "matters", "counts")
CONTRAST = _cue("or", "than", "versus", "vs", "against")
REFER_BACK = _cue("avoid", "those", "these", "them", "that", "it")
#: a question contrasting a flexible wish with a firm one
FLEXIBLE, FIRM = _cue("flexible", "flexibility"), _cue("firm")
HOW_MUCH_NEXT = _cue("can", "could", "are", "is", "do", "does", "would", "will", "should", "money", "you", "to", "for",
                     "at", "of", "max", "in", "would", "too", "i")
FLYING = _cue("fly", "flying", "flight", "flights", "operate", "operates", "operated", "travel", "airline", "book")
HOLD_WORDS = _cue("held", "hold", "holding", "reserved", "reservation")
#: neighbouring stems that bound the fare ("a maximum you'd like me to stay under", "won't go above")
BUDGET_PAIRS = {(stem(a), stem(b)) for a, b in (
    ("stay", "under"), ("stay", "below"), ("keep", "under"), ("keep", "below"), ("go", "above"), ("go", "beyond"),
    ("your", "limit"), ("upper", "limit"),
)}
#: offers of a service about prices or times ("notify you if the fare drops", "a reminder before you leave"):
#: the question asks whether to set it up, not the budget or the dates
NOTIFY = _cue("notify", "notification", "notifications", "remind", "reminder", "reminders", "alert", "alerts")
#: a payment method named: "pay" asks how, not how much ("how would you like to pay, by card or PayPal?")
PAY_METHODS = _cue("card", "paypal", "cash", "debit", "credit", "venmo", "transfer", "cheque", "check")
PAY_WORDS = _cue("pay", "payment", "charge")
#: kinds of fare, which a question may offer without asking the budget ("a flexible fare or the basic fare?")
FARE_KINDS = _cue("flexible", "basic", "refundable", "changeable", "economy", "premium", "standard", "saver", "light")
#: the currency prices are shown in ("displayed in euros or in dollars") is a display choice, not the budget
DISPLAY = _cue("display", "displayed", "shown", "show", "currency", "convert", "converted",
               "charged", "billed")  # (or paid in: "Would you like to be charged in euros or in US dollars?")
#: a price as shown or quoted: "is the price shown per person?" asks how it is shown, not the budget
QUOTED = _cue("shown", "displayed", "listed", "quoted", "advertised")
#: words that judge a price, so that it stays the budget ("is the price quoted acceptable to you?")
JUDGING = _cue("acceptable", "ok", "okay", "fine", "afford", "affordable", "too", "high", "higher", "much", "more",
               "limit", "max", "maximum", "pay", "spend")
#: what a fare covers: "does the Cirrus Lines fare include a checked bag?"
INCLUDES = _cue("include", "includes", "included", "including", "cover", "covers", "covered")
CURRENCIES = _cue("euro", "euros", "dollar", "dollars", "pound", "pounds", "currency", "yen", "usd", "eur", "gbp",
                  "nok", "krone", "kroner")
#: "whose planes would you prefer to be on?" asks the airline
PLANES = _cue("plane", "planes", "aircraft", "jet", "jets")
#: things an airline has: "the airline's cancellation policy" is about the policy, not which airline
AIRLINE_THINGS = _cue("policy", "policies", "baggage", "luggage", "allowance", "lounge", "app", "website", "fee",
                      "fees", "terms", "cancellation", "refund", "refunds", "rules", "assistance", "wheelchair",
                      "meal", "meals", "delay", "delays", "dietary", "bag", "bags", "suitcase", "number", "numbers",
                      "account", "accounts", "miles", "points", "program", "programme", "food", "allergy",
                      "allergies", "diet", "membership", "memberships", "medical", "condition", "conditions")
AIRLINE_CHOICE = _cue("which", "prefer", "preferred", "fly", "flying", "favourite", "favorite", "want", "accept",
                      "stick", "avoid", "matter", "mind")
COMMIT_WORDS = _cue("pay", "payment", "book", "booking", "purchase", "buy", "finalise", "finalize", "complete", "go",
                    "issue", "ticket",
                    "proceed", "confirm", "lock", "seal", "approve", "charge", "reserve")
#: a question about an amount, whatever its verb ("how high are you willing to go?", "what is the maximum you would
#: pay for a ticket?", "the maximum charge you would accept?"); and one that asks to act ("shall we pay for it?")
AMOUNT_ASKED = re.compile(r"\bhow\s+(?:much|high)\b|\bthe\s+(?:most|maximum|max|highest)\b(?!\s+(?:of|cheapest))", re.I)
#: the flight an amount is asked for, described by what the traveller said ("the maximum price you would like to pay
#: for your flight with Borealis on 2026-03-12?"): stated, not asked (unless it asks something: "… and which day?")
FLIGHT_DESCRIBED = re.compile(r"\s+(?:for|on)\s+(?:your|the|a|this)\s+(?:[\w\u2013-]+\s+){0,3}?flight\b"
                              r"(?:\s+(?:with|on|from|to|in|between)\s+[^,?;]*)?", re.I)
BUDGET_ASKED = re.compile(r"\b(?:what(?:'s|\s+is|\s+would\s+be)|specify|share|give\s+me|tell\s+me|provide|state)\s+"
                          r"(?:the|your)\s+(?:budget|price\s+limit|max(?:imum)?)\b", re.I)
ASKS_AGAIN = re.compile(r"\b(?:and|rather|instead|which|what|when|whether|if|do|does|are|is|would|could|can|any)\b",
                        re.I)
MAY_WE = re.compile(r"\b(?:shall|should|can|may|could)\s+(?:i|we)\b|\bdo\s+you\s+want\s+me\b", re.I)
#: words before "pay" that make it an amount: "what you want to pay", "the most you'd pay", "how much to pay"
AMOUNT_WORDS = _cue("what", "much", "most", "max", "maximum", "limit", "willing", "prepared", "upto")
#: an extra amount paid for a wish, between "pay" and its purpose ("pay $40 more to fly on your date")
EXTRA_PAID = _cue("$", "€", "£", "usd", "eur", "dollars", "euros", "a", "bit", "little", "more", "than", "extra",
                  "about", "around", "roughly")
#: what an extra amount is paid to do ("pay $340 to fly Borealis", "pay more to keep the date")
PAID_FOR = _cue("keep", "get", "stay", "have", "fly", "travel", "leave", "depart")
#: verbs of going over the budget ("would you exceed it slightly to fly with Borealis?")
EXCEED = _cue("exceed", "exceeding", "stretch", "stretching", "overshoot")
#: words that accept a named flight ("Is BO45612 at $320 fine with you?", "Is that okay?")
ACCEPT = _cue("fine", "ok", "okay", "alright", "happy", "agree")
#: verbs that add an extra to a booking ("do you want to add a checked bag?")
ADDING = _cue("add", "adding", "added")


#: what makes a date word a length of time or small talk (see :func:`_date_cues`)
TIME_PREPOSITIONS = _cue("before", "after", "until", "upon", "till")
UNITS = _cue("day", "days", "week", "weeks", "weekend", "month", "months", "morning", "evening")
NUMBER_WORDS = _cue("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                    "few", "several")
DURATION = _cue("for", "least", "about", "within", "over", "last", "past")
SMALL_TALK = _cue("been", "going", "was", "is", "so", "go")


#: "when you land": a conjunction about arriving, not a question about the date
ARRIVAL = _cue("land", "arrive", "get", "reach", "return")

#: after "when" these make it a conjunction about the booking, not a question about the date
WHEN_NOT = _cue("it", "that", "this", "everything", "done", "ready", "finished", "complete", "we", "searching",
                "looking", "booking", "comparing", "checking", "selecting", "choosing", "picking", "landing",
                "arriving", "boarding")

#: a route word after these names where something is ("a car at your destination", "for this route"),
#: it does not ask which route
LOCATIVE = _cue("at", "in", "near", "around", "on", "this", "for")


ORDINAL = re.compile(r"^\d{1,2}(st|nd|rd|th)$")
