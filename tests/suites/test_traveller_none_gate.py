"""The traveller's gate on questions about nothing (tool_suites/travel/none_gate.py): what it computes, what it may
change in a reading, and that its shipped weights are what bench/traveller_none_gate.py trains from the committed
corpus."""

import importlib
import math
import sys
from pathlib import Path

import pytest

from tests.suites.test_traveller_reading import Traveller

ROOT = Path(__file__).resolve().parents[2]
reading = importlib.import_module(Traveller.__module__.rsplit(".", 1)[0] + ".reading")
none_gate = importlib.import_module(Traveller.__module__.rsplit(".", 1)[0] + ".none_gate")


def bench():
    sys.path.insert(0, str(ROOT / "bench"))
    return importlib.import_module("traveller_none_gate")


def reader():
    return reading.Reader(["AS12301", "BO45612"], {"H1": {"flight": "AS12301", "status": "active"}},
                          ["Aster Air", "Borealis"], ["Lisbon", "Oslo"])


def test_the_probability_is_tf_idf_and_a_logistic_function():
    gate = none_gate.NoneGate(-0.5, {"seat": (2.0, 3.0), "window": (1.5, 1.0), "seat window": (3.0, 0.5)})
    # "seat seat window": seat twice (1 + ln 2), window and the pair "seat window" once; "seat seat" and an unknown
    # word ignored
    x = {"seat": (1 + math.log(2)) * 2.0, "window": 1.5, "seat window": 3.0}
    norm = math.sqrt(sum(v * v for v in x.values()))
    z = -0.5 + (3.0 * x["seat"] + 1.0 * x["window"] + 0.5 * x["seat window"]) / norm
    assert gate.probability(["seat", "seat", "window", "zebra"]) == pytest.approx(1 / (1 + math.exp(-z)))
    assert gate.probability(["zebra"]) == pytest.approx(1 / (1 + math.exp(0.5)))  # nothing known: the intercept


def test_the_gate_empties_a_slot_reading_and_leaves_confirmations_and_empty_readings(monkeypatch):
    question, confirmation = "Do you prefer a window seat on the Borealis flight?", "Shall I book AS12301 now?"
    r = reader()
    sure = none_gate.NoneGate(50.0, {})  # every question asks about nothing
    never = none_gate.NoneGate(-50.0, {})
    monkeypatch.setattr(reading, "shipped", lambda: never)
    assert r.read(question) == r.read_by_rules(question)
    monkeypatch.setattr(reading, "shipped", lambda: sure)
    long, short = "Which airline would you like me to book for you?", "Which airline?"
    assert r.read_by_rules(long).slots == r.read_by_rules(short).slots == ["airline"]
    assert r.read(long) == reading.Reading("ask", [])
    assert r.read(short).slots == ["airline"]  # fewer than MIN_WORDS stems: left to the rules
    assert r.read(confirmation) == r.read_by_rules(confirmation) == reading.Reading("confirm", flight="AS12301")


def test_the_shipped_gate_reads_the_shipped_weights():
    gate = none_gate.shipped()
    assert len(gate.weights) > 1000 and none_gate.WEIGHTS.exists()
    stems = reading.stems
    assert gate.probability(stems("Would you like a window or an aisle seat?")) > 0.9
    assert gate.probability(stems("Which airline would you like to fly with?")) < 0.1


def test_pure_python_matches_scikit_learn():
    pytest.importorskip("sklearn", reason="scikit-learn is the gate extra (make install brings it)")
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    b = bench()
    rows = b.corpus.questions(b.corpus.ROUNDS["round44"]) + b.corpus.questions(b.corpus.ROUNDS["round45"])
    gate = b.train(rows)
    vec = TfidfVectorizer(preprocessor=lambda q: " ".join(reading.stems(q)), token_pattern=r"\S+",
                          ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    x = vec.fit_transform([q for q, _ in rows])
    model = LogisticRegression(C=b.C, max_iter=5000, class_weight="balanced").fit(
        x, np.array([not e for _, e in rows]))
    expected = model.predict_proba(x)[:, 1]
    got = [gate.probability(reading.stems(q)) for q, _ in rows]
    assert got == pytest.approx(list(expected), abs=1e-9)


def test_the_shipped_weights_are_trained_from_the_committed_corpus():
    pytest.importorskip("sklearn", reason="scikit-learn is the gate extra (make install brings it)")
    b = bench()
    retrained = b.train([row for f in b.corpus.ORDER for row in b.corpus.questions(f)])
    shipped = none_gate.NoneGate.read()
    assert retrained.weights.keys() == shipped.weights.keys(), (
        "the corpus changed: run .venv/bin/python bench/traveller_none_gate.py --write")
    questions = [q for f in b.corpus.ORDER for q, _ in b.corpus.questions(f)]
    for q in questions:
        words = reading.stems(q)
        assert retrained.probability(words) == pytest.approx(shipped.probability(words), abs=1e-6), q
