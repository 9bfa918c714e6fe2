"""Questions over a generated encyclopedia, each with its gold answer and gold call DAG.

- ``single``: one attribute of a named entity (one ``open_page``).
- ``chain-d``: follow d-1 relations from a named entity, then ask an attribute of the entity
  reached; d serial ``open_page`` calls, each one's title the previous one's answer.
- ``compare-n``: which of n named entities is first/largest on a numeric attribute; n
  independent ``open_page`` calls that can go in one turn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from topoeval.core.suite import GoldCall

from .encyclopedia import ATTRIBUTES, COMPARISONS, RELATIONS, Encyclopedia, Entity


@dataclass
class Question:
    text: str
    answer: str
    gold: list[GoldCall]


def chain_question(enc: Encyclopedia, rng: random.Random, depth: int) -> Question:
    """A serial chain of ``depth`` page openings (depth 1 is a single-hop question)."""
    for _ in range(1000):
        start = rng.choice(list(enc.entities.values()))
        path: list[Entity] = [start]
        relations: list[str] = []
        while len(path) < depth:
            options = [r for r, (src, _, _) in RELATIONS.items() if src == path[-1].kind]
            rel = rng.choice(options)
            nxt = enc.entities[path[-1].rels[rel]]
            if nxt in path:
                break
            path.append(nxt)
            relations.append(rel)
        if len(path) < depth:
            continue
        attr = rng.choice([a for a, (kind, _) in ATTRIBUTES.items() if kind == path[-1].kind])
        phrase = start.name
        for rel in relations:
            phrase = RELATIONS[rel][2].format(x=phrase)
        text = ATTRIBUTES[attr][1].format(x=phrase)
        text = text[0].upper() + text[1:]
        gold = [
            GoldCall(id=f"h{i}", tool="open_page", arguments={"title": e.name}, depends_on=[f"h{i - 1}"] if i else [])
            for i, e in enumerate(path)
        ]
        return Question(text=text, answer=str(path[-1].attrs[attr]), gold=gold)
    raise RuntimeError(f"no chain of depth {depth} in this encyclopedia")


def compare_question(enc: Encyclopedia, rng: random.Random, n: int) -> Question:
    """Which of ``n`` entities of one kind wins on a numeric attribute (independent lookups)."""
    kind = rng.choice(sorted(COMPARISONS))
    attr, template, pick = COMPARISONS[kind]
    chosen = rng.sample(enc.of_kind(kind), n)
    names = [e.name for e in chosen]
    xs = ", ".join(names[:-1]) + f" or {names[-1]}"
    winner = pick(chosen, key=lambda e: e.attrs[attr])
    gold = [GoldCall(id=f"c{i}", tool="open_page", arguments={"title": name}) for i, name in enumerate(names)]
    return Question(text=template.format(xs=xs), answer=winner.name, gold=gold)
