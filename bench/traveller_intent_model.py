"""Would a small trained intent model read unseen questions better than the traveller's rules? Measured.

    .venv/bin/pip install scikit-learn && .venv/bin/python bench/traveller_intent_model.py

For each round of the corpus whose reader *before* that round's fixes is in git history (round4, round5,
round8, round9, round10, round11: the parent of the commit that added the round's file), the bench compares, on
that round's slot and ``none`` questions:

- **rules**: ``tool_suites/travel/reading.py`` as it stood before the round (what "first measured" means);
- **model**: a classifier trained on the rounds written before it — TF-IDF over the reader's stems (words
  and word pairs) and over character 3–5-grams, one logistic regression per slot (C 30), a slot asked
  when its probability is over 0.5 (``priority`` alone when it is one of them);
- **both**: the rules' slots, less one whose probability is under ``--drop`` (0.1), plus one they lack
  whose probability is over ``--add`` (0.6).

The thresholds and C were chosen on round4, round5, round8 and round9; round10 and round11 were written
after and measured once. It also prints the model's time a question (one question at a time, as the traveller is
asked). Needs a git checkout (the old readers come from history) and scikit-learn, which topoeval does
not depend on: the result is why (docs/suites.md).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import traveller as corpus  # noqa: E402  (bench/traveller.py: the corpus files and their order)

SLOTS = ("budget", "airline", "dates", "priority", "events", "route")
MEASURED = ("round4", "round5", "round8", "round9", "round10", "round11")


def reader_before(path: Path, folder: Path):
    """The reading module as it was before the commit that added ``path`` (with the lexicon and phrases modules
    beside it where that commit had them), imported as a package of its own."""
    rel = path.relative_to(ROOT).as_posix()
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", rel], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()[-1]
    package = folder / f"travel_{added[:8]}"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    for name in ("reading.py", "lexicon.py", "phrases.py"):
        shown = subprocess.run(["git", "show", f"{added}~1:tool_suites/travel/{name}"], cwd=ROOT,
                               capture_output=True, text=True)
        if shown.returncode == 0:
            (package / name).write_text(shown.stdout, encoding="utf-8")
    module = importlib.import_module(f"{package.name}.reading")
    airlines = ["Aster Air", "Borealis", "Dune Airways", "Cirrus Lines", "Egret Air"]
    reader = module.Reader(["AS12301", "BO45612", "DW77701", "CL12311", "EG40200"],
                           {"H1": {"flight": "AS12301", "status": "active"}}, airlines, ["Lisbon", "Oslo"])
    return reader, module


def train(rows: list[tuple[str, list[str]]], stems):
    """A function from one question to its slot probabilities."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_union

    vec = make_union(TfidfVectorizer(preprocessor=lambda q: " ".join(stems(q)), ngram_range=(1, 2),
                                     sublinear_tf=True, token_pattern=r"\S+"),
                     TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True))
    x = vec.fit_transform([q for q, _ in rows])
    models = [LogisticRegression(C=30.0, max_iter=3000).fit(x, np.array([s in slots for _, slots in rows]))
              for s in SLOTS]
    return lambda q: [float(m.predict_proba(vec.transform([q]))[0, 1]) for m in models]


def decide(rules: set[str], p: list[float], add: float, drop: float) -> list[str]:
    slots = {s for s, ps in zip(SLOTS, p, strict=True) if (ps >= drop if s in rules else ps >= add)}
    return ["priority"] if "priority" in slots else sorted(slots)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--add", type=float, default=0.6)
    ap.add_argument("--drop", type=float, default=0.1)
    a = ap.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("needs scikit-learn: .venv/bin/pip install scikit-learn")
    names = {"round4": corpus.ROUND4, **corpus.ROUNDS}
    print(f"{'round':8} {'kind':6} {'n':>4} {'rules':>6} {'model':>6} {'both':>6}")
    per_question = []
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)  # where reader_before writes the old readers' packages
        for name in MEASURED:
            path = names[name]
            reader, module = reader_before(path, Path(tmp))
            before = [row for f in corpus.ORDER[:corpus.ORDER.index(path)] for row in corpus.questions(f)]
            predict = train(before, module.stems)
            rows = corpus.questions(path)
            start = time.perf_counter()
            probs = [predict(q) for q, _ in rows]
            per_question.append((time.perf_counter() - start) / len(rows))
            for kind, keep in (("slots", bool), ("none", lambda e: not e)):
                picked = [(q, e, p) for (q, e), p in zip(rows, probs, strict=True) if keep(e)]
                rules = [sorted(reader.read(q).slots) for q, _, _ in picked]
                right = [sum(got == e for got, (_, e, _) in zip(col, picked, strict=True)) / len(picked) for col in (
                    rules, [decide(set(), p, 0.5, 0.0) for _, _, p in picked],
                    [decide(set(r), p, a.add, a.drop) for r, (_, _, p) in zip(rules, picked, strict=True)])]
                print(f"{name:8} {kind:6} {len(picked):4d} " + " ".join(f"{v:6.3f}" for v in right))
    print(f"model: {sum(per_question) / len(per_question) * 1e3:.1f} ms a question (mean over the rounds)")


if __name__ == "__main__":
    main()
