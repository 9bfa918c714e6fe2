"""A small encyclopedia generated from a seed: people, places and organisations.

Each entity has attributes (years, occupations, countries, ...) and relations to other
entities (a person's birthplace and employer, an organisation's founder and headquarters,
a city's mayor). Relations are what multi-hop questions follow; attributes are what they
end on. Every entity is rendered into an article whose title is the entity's name.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

FIRST_NAMES = (
    "Ada Alma Anja Arvid Basil Bela Cora Dario Edda Elio Enzo Faye Fenna Gideon Greta Hale Ilse Ines Ivo Jora "
    "Kasimir Lena Lior Mara Milo Nadia Nils Odile Orin Petra Quill Rhea Rune Sabine Silas Tamsin Teo Una Vera "
    "Wren Yara Zeno Linus Mina Otto Pia Rosa Sven Tove"
).split()
SYLLABLES = "ka ro mi lun ve sta bra cor del fen gar hul ith jor kel lam mor nor pel quin ras sel tor ul vin wex yor zan".split()
PLACE_SUFFIXES = ("ford", "heim", "port", "vale", "burg", "mouth", "stead", "wick")
ORG_KINDS = ("Dynamics", "Institute", "Foundry", "Works", "Collective", "Laboratories", "Mills", "Press")
COUNTRIES = ("Ardonia", "Belmark", "Corvania", "Dravia", "Estmere", "Falkland Reach", "Galdor", "Hestia", "Ixtal")
OCCUPATIONS = ("painter", "engineer", "botanist", "architect", "cartographer", "composer", "surgeon", "novelist")
INDUSTRIES = ("shipbuilding", "textiles", "optics", "publishing", "aviation", "pharmaceuticals", "mining", "software")

#: relation name -> (source kind, target kind, noun phrase used in questions)
RELATIONS = {
    "birthplace": ("person", "place", "the birthplace of {x}"),
    "employer": ("person", "org", "the employer of {x}"),
    "founder": ("org", "person", "the founder of {x}"),
    "headquarters": ("org", "place", "the city where {x} is headquartered"),
    "mayor": ("place", "person", "the mayor of {x}"),
}
#: attribute name -> (entity kind, question template)
ATTRIBUTES = {
    "birth_year": ("person", "In what year was {x} born?"),
    "occupation": ("person", "What is the occupation of {x}?"),
    "founded": ("org", "In what year was {x} founded?"),
    "industry": ("org", "In which industry does {x} work?"),
    "country": ("place", "In which country is {x}?"),
    "population": ("place", "What is the population of {x}?"),
}
#: kind -> (numeric attribute, question for "which is first", which extreme wins)
COMPARISONS = {
    "person": ("birth_year", "Who was born first: {xs}?", min),
    "org": ("founded", "Which was founded first: {xs}?", min),
    "place": ("population", "Which has the larger population: {xs}?", max),
}


@dataclass
class Entity:
    name: str
    kind: str
    attrs: dict[str, object] = field(default_factory=dict)
    rels: dict[str, str] = field(default_factory=dict)


class Encyclopedia:
    """Entities by name plus their rendered articles."""

    def __init__(self, entities: list[Entity], rng: random.Random):
        self.entities = {e.name: e for e in entities}
        self.pages = {e.name: render_article(e, self, rng) for e in entities}

    def of_kind(self, kind: str) -> list[Entity]:
        return [e for e in self.entities.values() if e.kind == kind]


def generate(
    rng: random.Random, name_pool: int, n_pools: int, n_people: int = 12, n_orgs: int = 6, n_places: int = 6
) -> Encyclopedia:
    """A consistent encyclopedia: unique names, unique comparison values, every relation filled.

    Names come from pool ``name_pool`` of ``n_pools`` disjoint pools (first names, place
    suffixes and organisation kinds are dealt out to the pools). Each split uses its own pool,
    so no entity name — and hence no question — can appear in two splits.
    """
    used: set[str] = set()
    first_names = FIRST_NAMES[name_pool::n_pools]
    place_suffixes = PLACE_SUFFIXES[name_pool::n_pools]
    org_kinds = ORG_KINDS[name_pool::n_pools]

    def unique(make) -> str:
        while True:
            name = make()
            if name not in used:
                used.add(name)
                return name

    def surname() -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()

    people = [Entity(unique(lambda: f"{rng.choice(first_names)} {surname()}"), "person") for _ in range(n_people)]
    places = [Entity(unique(lambda: surname() + rng.choice(place_suffixes)), "place") for _ in range(n_places)]
    orgs = [Entity(unique(lambda: f"{surname()} {rng.choice(org_kinds)}"), "org") for _ in range(n_orgs)]

    years = rng.sample(range(1890, 2000), n_people)
    for p, year in zip(people, years):
        p.attrs = {"birth_year": year, "occupation": rng.choice(OCCUPATIONS)}
        p.rels = {"birthplace": rng.choice(places).name, "employer": rng.choice(orgs).name}
    for o, year in zip(orgs, rng.sample(range(1800, 1990), n_orgs)):
        o.attrs = {"founded": year, "industry": rng.choice(INDUSTRIES)}
        o.rels = {"founder": rng.choice(people).name, "headquarters": rng.choice(places).name}
    for pl, pop in zip(places, rng.sample(range(2_000, 900_000, 500), n_places)):
        pl.attrs = {"country": rng.choice(COUNTRIES), "population": pop}
        pl.rels = {"mayor": rng.choice(people).name}
    return Encyclopedia(people + places + orgs, rng)


def render_article(e: Entity, enc: Encyclopedia, rng: random.Random) -> str:
    """The article text of an entity: its facts in prose, then back-links from other articles."""
    a, r = e.attrs, e.rels
    linked = sorted(o.name for o in enc.entities.values() if e.name in o.rels.values() and o.name != e.name)
    if e.kind == "person":
        text = (
            f"{e.name} is a {a['occupation']} born in {a['birth_year']} in {r['birthplace']}. "
            f"{e.name.split()[0]} works for {r['employer']}."
        )
    elif e.kind == "org":
        text = (
            f"{e.name} is an organisation in the {a['industry']} industry, founded in {a['founded']} "
            f"by {r['founder']}. It is headquartered in {r['headquarters']}."
        )
    else:
        text = (
            f"{e.name} is a city in {a['country']} with a population of {a['population']}. "
            f"Its mayor is {r['mayor']}."
        )
    filler = rng.choice(
        (
            f"The city archives hold several letters about {e.name}.",
            f"{e.name} is mentioned in many regional histories.",
            f"Local newspapers have covered {e.name} for decades.",
        )
    )
    see_also = f" See also: {', '.join(linked)}." if linked else ""
    return f"{text} {filler}{see_also}"
