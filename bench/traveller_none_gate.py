"""The traveller's gate on questions about nothing (tool_suites/travel/none_gate.py): trained and measured here.

    .venv/bin/python bench/traveller_none_gate.py --measure     # leave-the-future-out, rounds 36 on (--from, --to)
    .venv/bin/python bench/traveller_none_gate.py --write       # train on the whole corpus, write none_gate.tsv

``--measure``: for each round from ``--from`` (36) on, the reader as it stood before that round's fixes (from git
history: the parent of the commit that added the round's file) reads the round's slot and ``none`` questions; a
gate trained only on the rounds written before it is then set on those readings (a slot reading becomes "asks
nothing" when the gate's probability is at least the threshold), and both are scored — what "first measured"
means, with and without the gate, on questions neither had seen. Confirmations are not gated. ``--write``: the
gate the traveller ships, trained on every slot and ``none`` question of the corpus. Needs scikit-learn (make
install brings it; topoeval does not need it at run time) and, for ``--measure``, a git checkout.
"""

from __future__ import annotations

import argparse
import importlib
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import traveller as corpus  # noqa: E402  (bench/traveller.py: the corpus files and their order)

from tool_suites.travel.lexicon import stems  # noqa: E402
from tool_suites.travel.none_gate import MIN_WORDS, THRESHOLD, WEIGHTS, NoneGate  # noqa: E402

#: the regularisation (scikit-learn's C), chosen with the threshold and the minimum length on rounds 36–49 (and the
#: rules' probe tests) before rounds 50 and 51 were read
C = 30.0


def train(rows: list[tuple[str, list[str]]], c: float = C) -> NoneGate:
    """A gate trained on these rows (``none`` against every slot question), as the traveller computes it."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = TfidfVectorizer(preprocessor=lambda q: " ".join(stems(q)), token_pattern=r"\S+", ngram_range=(1, 2),
                          sublinear_tf=True, min_df=2)
    x = vec.fit_transform([q for q, _ in rows])
    model = LogisticRegression(C=c, max_iter=5000, class_weight="balanced").fit(x, np.array([not e for _, e in rows]))
    return NoneGate(float(model.intercept_[0]), {f: (float(vec.idf_[i]), float(model.coef_[0, i]))
                                                 for f, i in vec.vocabulary_.items()})


def reader_before(path: Path, folder: Path):
    """The reader as it was before the commit that added ``path``, imported as a package of its own."""
    rel = path.relative_to(ROOT).as_posix()
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", rel], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()[-1]
    archive = subprocess.run(["git", "archive", f"{added}~1", "tool_suites/travel"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder / "archive", filter="data")
    package = folder / f"travel_{added[:8]}"
    (folder / "archive" / "tool_suites" / "travel").rename(package)
    sys.path.insert(0, str(folder))
    module = importlib.import_module(f"{package.name}.reading")
    return module.Reader(["AS12301", "BO45612", "DW77701", "CL12311", "EG40200", "AS12310"],
                         {"H1": {"flight": "AS12301", "status": "active"},
                          "H2": {"flight": "BO45612", "status": "released"}},
                         ["Aster Air", "Borealis", "Dune Airways", "Cirrus Lines", "Egret Air"], ["Lisbon", "Oslo"])


def measure(first: int, last: int, c: float, threshold: float, min_words: int) -> None:
    names = dict(corpus.ROUNDS)
    totals = {k: [0, 0] for k in ("slots rules", "slots gated", "none rules", "none gated")}
    print(f"{'round':8} {'kind':6} {'n':>4} {'rules':>6} {'gated':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(first, last + 1):
            path = names[f"round{n}"]
            folder = Path(tmp) / f"round{n}"
            folder.mkdir()
            reader = reader_before(path, folder)
            gate = train([row for f in corpus.ORDER[:corpus.ORDER.index(path)] for row in corpus.questions(f)], c)
            rows = corpus.questions(path)
            # (the rules alone, where that reader already had a gate of its own)
            read = getattr(reader, "read_by_rules", reader.read)
            readings = [read(q) for q, _ in rows]
            rules = [sorted(r.slots) if r.kind == "ask" else ["confirm"] for r in readings]
            gated = [[] if got and got != ["confirm"] and gate.asks_nothing(stems(q), threshold, min_words) else got
                     for got, (q, _) in zip(rules, rows, strict=True)]
            for kind, keep in (("slots", bool), ("none", lambda e: not e)):
                picked = [i for i, (_, e) in enumerate(rows) if keep(e)]
                if not picked:
                    continue
                right = [sum(col[i] == rows[i][1] for i in picked) for col in (rules, gated)]
                for name, r in zip(("rules", "gated"), right, strict=True):
                    totals[f"{kind} {name}"][0] += r
                    totals[f"{kind} {name}"][1] += len(picked)
                shares = " ".join(f"{r / len(picked):6.3f}" for r in right)
                print(f"round{n:<3} {kind:6} {len(picked):4d} {shares}")
    for name, (right, total) in totals.items():
        print(f"{name:12} {right:5d} / {total:5d} = {right / total:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--measure", action="store_true", help="leave-the-future-out, rounds --from on")
    what.add_argument("--write", action="store_true", help=f"train on the whole corpus and write {WEIGHTS.name}")
    ap.add_argument("--from", dest="first", type=int, default=36)
    ap.add_argument("--to", dest="last", type=int, default=corpus.LAST_ROUND)
    ap.add_argument("--C", dest="c", type=float, default=C)
    ap.add_argument("--threshold", type=float, default=THRESHOLD)
    ap.add_argument("--min-words", type=int, default=MIN_WORDS)
    a = ap.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("needs scikit-learn: .venv/bin/pip install scikit-learn")
    if a.measure:
        measure(a.first, a.last, a.c, a.threshold, a.min_words)
    else:
        gate = train([row for f in corpus.ORDER for row in corpus.questions(f)], a.c)
        gate.write()
        print(f"wrote {WEIGHTS.relative_to(ROOT)}: {len(gate.weights)} features")


if __name__ == "__main__":
    main()
