"""Generating one travel task: a route, flights over a few dates, city events, a traveller.

The traveller's choice rule is fixed and stated to the model: a flight is judged by the
constraints in the traveller's priority order (date, budget, airline — each satisfied or not,
compared lexicographically from the top), and among flights that tie, the cheapest wins. The
*target* is the one flight that rule picks among flights with a free seat. It is unique because
prices are unique. The user confirms the target and only the target.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

#: Origin cities, dealt out to the four splits (each split uses its own pool, so no prompt of
#: one split can occur in another).
ORIGINS = (
    "Lisbon Oslo Vienna Dublin Prague Warsaw Athens Helsinki Zurich Madrid Brussels Budapest "
    "Copenhagen Stockholm Munich Milan"
).split()
DESTINATIONS = ("Tokyo", "Kyoto", "Seoul", "Taipei", "Bangkok", "Hanoi", "Manila", "Osaka")
AIRLINES = {"AS": "Aster Air", "BO": "Borealis", "CL": "Cirrus Lines", "DW": "Dune Airways", "EG": "Egret Air"}
EVENTS = ("Blossom Festival", "Lantern Week", "Harbour Regatta", "Marathon Weekend", "Film Festival", "Trade Fair")
CONSTRAINTS = ("date", "budget", "airline")
FAMILIES = ("full", "underspecified", "tradeoff", "events", "flexible")


@dataclass
class Flight:
    id: str
    airline: str
    date: str
    depart: str
    price: int
    seats: int

    def public(self) -> dict[str, Any]:
        return {"flight_id": self.id, "airline": self.airline, "date": self.date, "depart": self.depart,
                "price": self.price, "seats_left": self.seats}


@dataclass
class Scenario:
    """Everything a travel task needs; ``world()`` / ``truth()`` split it into world data and ground truth."""

    family: str
    origin: str
    destination: str
    month: str
    candidate_dates: list[str]
    preferred_dates: list[str]
    budget: int
    airline: str | None
    priority: list[str]
    flights: list[Flight]
    events: list[dict[str, str]]
    avoid: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    #: Flat ordering: trade-offs are settled by the number of wishes met, not by a priority order.
    flat: bool = False

    def satisfied(self, f: Flight) -> dict[str, bool]:
        return {
            "date": f.date in self.preferred_dates,
            "budget": f.price <= self.budget,
            "airline": self.airline is None or f.airline == self.airline,
        }

    def rank_key(self, f: Flight) -> tuple:
        """Sort key of the traveller's choice rule (smaller is better)."""
        ok = self.satisfied(f)
        if self.flat:
            return (-sum(ok.values()), f.price)
        return (*(not ok[c] for c in self.priority), f.price)

    def searchable(self) -> list[Flight]:
        """Flights on the dates the traveller would consider (what a careful agent searches)."""
        dates = set(self.search_dates())
        return [f for f in self.flights if f.date in dates]

    def search_dates(self) -> list[str]:
        if self.family == "events":
            return list(self.preferred_dates)
        return list(self.candidate_dates)

    def target(self) -> Flight:
        return min((f for f in self.searchable() if f.seats > 0), key=self.rank_key)


def _dates(start: date, n: int) -> list[str]:
    return [(start + timedelta(days=i)).isoformat() for i in range(n)]


def _flights(rng: random.Random, dates: list[str], per_date: int) -> list[Flight]:
    prices = rng.sample(range(180, 990, 7), per_date * len(dates))
    flights = []
    for i, d in enumerate(dates):
        for j in range(per_date):
            code = rng.choice(sorted(AIRLINES))
            flights.append(
                Flight(
                    id=f"{code}{rng.randrange(100, 999)}{i}{j}",
                    airline=AIRLINES[code],
                    date=d,
                    depart=f"{rng.randrange(6, 22):02d}:{rng.choice(('00', '15', '30', '45'))}",
                    price=prices[i * per_date + j],
                    seats=rng.choice((0, 1, 2, 3, 4, 5, 6)) if j else rng.randrange(1, 7),
                )
            )
    return flights


def generate(
    rng: random.Random, split_pool: int, n_pools: int, family: str,
    force_hidden: tuple[str, ...] = (), priority_rng: random.Random | None = None,
    user: bool = True, flat: bool = False,
) -> Scenario:
    """A scenario of ``family`` whose target exists and whose trap (if any) differs from it.

    ``force_hidden`` slots are hidden on every family but trade-offs (the ``hide_slots``
    transform); ``priority_rng`` re-draws trade-off priority orders (``shuffle_priority``);
    ``user=False`` states every slot in the prompt; ``flat`` settles trade-offs by the number of
    wishes met instead of a priority order.
    """
    for _ in range(2000):
        sc = _draw(rng, split_pool, n_pools, family, force_hidden, priority_rng)
        # Well-formed under both orderings and with the user present, whatever this topology
        # uses: the axis parameters then leave the sequence of draws unchanged, so topologies
        # that differ only in them pose the same scenarios (paired ladder steps).
        if sc is not None and _well_formed(sc) and _flat_ok(sc):
            sc.flat = flat
            if not user:
                sc.hidden = []
            return sc
    raise RuntimeError(f"could not generate a '{family}' travel task")


def _draw(rng: random.Random, split_pool: int, n_pools: int, family: str,
          force_hidden: tuple[str, ...] = (), priority_rng: random.Random | None = None) -> Scenario | None:
    origin = rng.choice(ORIGINS[split_pool::n_pools])
    destination = rng.choice(DESTINATIONS)
    start = date(2027, rng.randrange(1, 13), rng.randrange(1, 20))
    month = start.strftime("%Y-%m")
    n_dates = {"full": 1, "underspecified": 2, "tradeoff": rng.choice((2, 3)),
               "events": rng.choice((4, 5)), "flexible": rng.choice((3, 4))}[family]
    cands = _dates(start, n_dates)
    # a few days either side carry flights too, so searching the wrong dates finds something
    flights = _flights(rng, _dates(start - timedelta(days=2), n_dates + 4), per_date=4)
    airline = rng.choice([None, *AIRLINES.values()]) if family != "tradeoff" else rng.choice(list(AIRLINES.values()))
    priority = list(CONSTRAINTS)
    if family == "tradeoff":
        rng.shuffle(priority)
        if priority_rng is not None:
            priority_rng.shuffle(priority)
    preferred = list(cands)
    events: list[dict[str, str]] = []
    avoid: list[str] = []
    names = rng.sample(EVENTS, 3)
    if family == "tradeoff":
        preferred = [rng.choice(cands)]
    if family == "events":
        k = rng.randrange(1, n_dates - 1)  # event covers k days at one end of the window
        covered = cands[:k] if rng.random() < 0.5 else cands[-k:]
        preferred = [d for d in cands if d not in covered]
        events.append({"name": names[0], "start": covered[0], "end": covered[-1]})
        avoid = [names[0]]
    # distractor events far from the window, same month or the next
    for name in names[1:]:
        d0 = start + timedelta(days=rng.choice((-9, -6, 8, 11)))
        events.append({"name": name, "start": d0.isoformat(), "end": (d0 + timedelta(days=1)).isoformat()})
    pool = sorted(f.price for f in flights if f.date in cands)
    budget = pool[rng.randrange(len(pool) // 3, len(pool) - 1)] + rng.randrange(0, 6)
    hidden: list[str] = []
    if family == "underspecified":
        hidden = rng.sample(["budget", "airline", "dates"], rng.choice((1, 2)))
    elif family in ("events", "flexible") and rng.random() < 0.5:
        hidden = [rng.choice(["budget", "airline"])]
    if family != "tradeoff" and force_hidden:
        hidden = [s for s in ("budget", "airline", "dates") if s in hidden or s in force_hidden]
    if "airline" in hidden and airline is None:
        airline = rng.choice(list(AIRLINES.values()))
    return Scenario(family, origin, destination, month, cands, preferred, budget, airline, priority,
                    flights, events, avoid, hidden)


def _flat_ok(sc: Scenario) -> bool:
    """Under flat ordering a trade-off's target is the flight meeting the most wishes; ignoring
    the wishes (the lowest price) must still give another flight."""
    if sc.family != "tradeoff":
        return True
    search = [f for f in sc.searchable() if f.seats > 0]
    flat = min(search, key=lambda f: (-sum(sc.satisfied(f).values()), f.price))
    return min(search, key=lambda f: f.price).id != flat.id


def _well_formed(sc: Scenario) -> bool:
    """The family's defining property holds, and the shortcuts a flawed agent would take fail."""
    search = [f for f in sc.searchable() if f.seats > 0]
    if not search:
        return False
    target = sc.target()
    all_ok = [f for f in search if all(sc.satisfied(f).values())]
    if sc.family == "tradeoff":
        if any(all(sc.satisfied(f).values()) for f in sc.searchable()):
            return False  # a trade-off task has no flight that satisfies everything
        flat = min(search, key=lambda f: (-sum(sc.satisfied(f).values()), f.price))
        cheapest = min(search, key=lambda f: f.price)
        # ignoring the priority order (flat count, or lowest price) must give another flight
        return flat.id != target.id and cheapest.id != target.id and sc.satisfied(target)[sc.priority[0]]
    if not all_ok:
        return False
    cheapest = min(search, key=lambda f: f.price)
    if sc.family == "events":
        window = [f for f in sc.flights if f.date in sc.candidate_dates and f.seats > 0]
        ignoring = min(window, key=lambda f: (not (f.price <= sc.budget and (sc.airline is None or f.airline == sc.airline)), f.price))
        if ignoring.id == target.id:
            return False  # ignoring the event must lead to a wrong flight
    if sc.hidden:
        # guessing instead of asking must be able to go wrong: the target is not simply the cheapest
        if cheapest.id == target.id:
            return False
    return True
