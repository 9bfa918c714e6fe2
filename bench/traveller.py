"""How well the travel suite's deterministic traveller reads paraphrased questions, and how fast.

    .venv/bin/python bench/traveller.py            # accuracy per split and label kind, then µs a question

The corpus is tests/suites/data/traveller_questions*.tsv (6,122 questions, written before the matcher and
independently of its word lists): ``dev`` (the first file less every third question) was tuned on;
``heldout`` (every third question of the first file), ``fresh``, ``final``, ``round4`` … ``round57`` (the other
files) were each written before the round that measured them once, then became tuning data (each
file's header and docs/suites.md give the first-measured figures). A slot question
is right when the traveller answers exactly its labelled slots; a ``none`` question when it maps to no
slot; a confirmation when it is read as a confirmation of the labelled flight. Timing: every question
asked ``--rounds`` times through ``Traveller.ask`` (the events list cleared between rounds).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "suites" / "data"
CORPUS = DATA / "traveller_questions.tsv"
FRESH = DATA / "traveller_questions_fresh.tsv"
FINAL = DATA / "traveller_questions_final.tsv"
ROUND4 = DATA / "traveller_questions_round4.tsv"
#: later rounds, one file each, named by their split
#: (a new round's file is added here only after its first measurement, in its header)
LAST_ROUND = 57
ROUNDS = {f"round{n}": DATA / f"traveller_questions_round{n}.tsv" for n in range(5, LAST_ROUND + 1)}
SPLITS = ("dev", "heldout", "fresh", "final", "round4", *ROUNDS)
#: the corpus's files in the order they were written
ORDER = [CORPUS, FRESH, FINAL, ROUND4, *ROUNDS.values()]


def load(path: Path = CORPUS, fresh: Path | None = FRESH, final: Path | None = FINAL,
         round4: Path | None = ROUND4, rounds: dict[str, Path] | None = None) -> list[dict]:
    """Rows of the corpus: question, kind (slots | none | confirm), expected slots or flight, split
    (the first file: every third row ``heldout``, the others ``dev``; every other file its own split)."""
    rows = _rows(path, lambda i: "heldout" if i % 3 == 2 else "dev")
    rows += _rows(fresh, lambda i: "fresh") if fresh is not None else []
    rows += _rows(final, lambda i: "final") if final is not None else []
    rows += _rows(round4, lambda i: "round4") if round4 is not None else []
    for split, file in (ROUNDS if rounds is None else rounds).items():
        rows += _rows(file, lambda i, split=split: split)
    return rows


def questions(path: Path) -> list[tuple[str, list[str]]]:
    """(question, sorted slots) of a file's slot and ``none`` rows."""
    return [(r["question"], r["expected"]) for r in _rows(path, lambda i: "") if r["kind"] != "confirm"]


def _rows(path: Path, split_of) -> list[dict]:
    rows: list[dict] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, question = line.split("\t", 1)
        split = split_of(len(rows))
        if label.startswith("confirm:"):
            rows.append({"question": question, "kind": "confirm", "expected": label[8:], "split": split})
        elif label == "none":
            rows.append({"question": question, "kind": "none", "expected": [], "split": split})
        else:
            rows.append({"question": question, "kind": "slots", "expected": sorted(label.split("+")), "split": split})
    return rows


def traveller():
    """A traveller with the corpus's context: hold H1 active on AS12301, H2 released (BO45612)."""
    from tool_suites.travel.user import Traveller

    truth = {"target": "AS12301", "acceptable": ["AS12301"], "budget": 300, "airline": "Borealis",
             "candidate_dates": ["2026-03-12", "2026-03-13"], "priority": ["date", "budget", "airline"],
             "origin": "Lisbon", "destination": "Oslo"}
    holds = {"H1": {"flight": "AS12301", "status": "active", "created": 1},
             "H2": {"flight": "BO45612", "status": "released", "created": 2}}
    flights = [{"flight_id": fid, "airline": airline} for fid, airline in
               (("AS12301", "Aster Air"), ("BO45612", "Borealis"), ("DW77701", "Dune Airways"),
                ("CL12311", "Cirrus Lines"), ("EG40200", "Egret Air"), ("AS12310", "Aster Air"))]
    return Traveller(truth, [], holds, flights)


def right(row: dict, event: dict) -> bool:
    if row["kind"] == "confirm":
        return event["type"] == "confirm" and event["object"] == row["expected"]
    return event["type"] == "ask" and sorted(event["slots"]) == row["expected"]


def evaluate(rows: list[dict]) -> tuple[dict[tuple[str, str], list[int]], list[tuple[dict, dict]]]:
    """{(split, kind): [right, total]} and the misread rows with what the traveller recorded."""
    t = traveller()
    counts: dict[tuple[str, str], list[int]] = {}
    wrong = []
    for row in rows:
        t.ask(row["question"])
        event = t.events[-1]
        c = counts.setdefault((row["split"], row["kind"]), [0, 0])
        ok = right(row, event)
        c[0] += ok
        c[1] += 1
        if not ok:
            wrong.append((row, event))
    return counts, wrong


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--show", choices=(*SPLITS, "all"), help="print the misread questions of a split")
    a = ap.parse_args()
    rows = load()
    counts, wrong = evaluate(rows)
    print(f"{len(rows)} questions: " + ", ".join(f"{sum(r['split'] == s for r in rows)} {s}" for s in SPLITS))
    print(f"{'split':8} {'kind':8} {'right':>6} {'n':>4} {'share':>6}")
    for split in SPLITS:
        for kind in ("slots", "none", "confirm"):
            ok, n = counts.get((split, kind), [0, 0])
            print(f"{split:8} {kind:8} {ok:6d} {n:4d} {ok / n if n else 0:6.3f}")
    if a.show:
        for row, event in (w for w in wrong if a.show in ("all", w[0]["split"])):
            print(f"  [{row['split']}] {row['question']!r}: want {row['expected']}, got "
                  f"{event.get('slots', event.get('object'))} ({event['type']})")
    t = traveller()
    start = time.perf_counter()
    for _ in range(a.rounds):
        for row in rows:
            t.ask(row["question"])
        t.events.clear()
    per = (time.perf_counter() - start) / (a.rounds * len(rows))
    print(f"{per * 1e6:.1f} µs a question (mean over {a.rounds} × {len(rows)})")


if __name__ == "__main__":
    main()
