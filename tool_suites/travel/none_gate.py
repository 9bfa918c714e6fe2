"""The traveller's gate on questions about nothing (issue 27): a logistic regression over a question's stems, words
and word pairs weighted by TF-IDF, trained on the committed corpus by ``bench/traveller_none_gate.py --write``.

The reader's rules find the slots a question asks; many questions about something else (a seat, a lounge, the
weather, a loyalty number) hold a slot's word, and each new sample of them found phrasings the rules had not met.
So when the rules find a slot, the reader asks the gate too, and reads the question as asking nothing when the
gate's probability that it does is at least :data:`THRESHOLD`. The gate never adds a slot and never touches a
confirmation. It is plain arithmetic over :data:`WEIGHTS` (no dependency at run time): the same TF-IDF and
logistic function scikit-learn computes — sublinear term frequency, smoothed idf, L2 norm — which a test checks
against scikit-learn itself where it is installed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

#: the trained weights: a header line ``# intercept <b>``, then ``feature<TAB>idf<TAB>coefficient`` per feature
WEIGHTS = Path(__file__).with_name("none_gate.tsv")
#: the probability at or over which a question the rules read as asking a slot is read as asking nothing
#: (chosen with C and MIN_WORDS on rounds 36–49 before rounds 50 and 51 were read: bench/traveller_none_gate.py
#: --measure --to 49; 0.5 with --min-words 0 fixed more there, 373 of 395 questions about nothing against 362, but
#: emptied slot questions the rules' probe tests hold, "Do you want Aster Air?" among them)
THRESHOLD = 0.8
#: questions shorter than this (in stems) are left to the rules: a few words give the gate too little to go on
#: ("Do you want Aster Air?")
MIN_WORDS = 6


def features(words: Iterable[str]) -> Counter[str]:
    """A question's features: its stems and each pair of neighbouring stems ("a b")."""
    words = list(words)
    return Counter(words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)])


@dataclass(frozen=True)
class NoneGate:
    """A trained gate: the intercept and, per feature, its idf and its coefficient."""

    intercept: float
    weights: dict[str, tuple[float, float]]

    def probability(self, words: Iterable[str]) -> float:
        """The probability that a question (as stems) asks about nothing the traveller knows."""
        x = {f: (1.0 + math.log(n)) * self.weights[f][0] for f, n in features(words).items() if f in self.weights}
        norm = math.sqrt(sum(v * v for v in x.values())) or 1.0
        z = self.intercept + sum(self.weights[f][1] * v / norm for f, v in x.items())
        return 1.0 / (1.0 + math.exp(-z))

    def asks_nothing(self, words: list[str], threshold: float = THRESHOLD, min_words: int = MIN_WORDS) -> bool:
        """Whether a question the rules read as asking a slot asks about nothing instead."""
        return len(words) >= min_words and self.probability(words) >= threshold

    def write(self, path: Path = WEIGHTS) -> None:
        lines = [f"# intercept\t{self.intercept!r}"]
        lines += [f"{f}\t{idf!r}\t{coef!r}" for f, (idf, coef) in sorted(self.weights.items())]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: Path = WEIGHTS) -> NoneGate:
        head, *rows = path.read_text(encoding="utf-8").splitlines()
        weights = {}
        for row in rows:
            f, idf, coef = row.split("\t")
            weights[f] = (float(idf), float(coef))
        return cls(float(head.split("\t")[1]), weights)


@cache
def shipped() -> NoneGate:
    """The gate the traveller uses (read once)."""
    return NoneGate.read()
