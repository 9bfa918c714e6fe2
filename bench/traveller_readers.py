"""Does a change to the traveller's reader move any episode of a run? Two readers on a run's own questions.

    .venv/bin/python bench/traveller_readers.py RUN_DIR --against REV     # e.g. a run folder, a commit

Every ``ask_user`` question in ``RUN_DIR``'s episodes (``episodes*.jsonl``, found below it) is read by the
travel suite's reader as it is now and as it was at ``REV`` (``tool_suites/travel/`` from git history);
the questions read differently are printed. None read differently means the change cannot have moved
those episodes' scores (the traveller's answers, and so the rest of each episode, are the same). Both
readers see the corpus bench's world (bench/traveller.py: hold H1 on AS12301, its six flights), so a
confirmation of a flight of the run's own world reads as a confirmation of a made-up flight in both.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import traveller as corpus  # noqa: E402  (bench/traveller.py: the corpus's world)


def questions(run_dir: Path) -> list[str]:
    """The ``ask_user`` questions of a run folder's episodes, in file order."""
    out = []
    for path in sorted(run_dir.rglob("episodes*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for call in json.loads(line).get("calls") or []:
                question = (call.get("arguments") or {}).get("question")
                if call.get("name") == "ask_user" and isinstance(question, str):
                    out.append(question)
    return out


def traveller_at(rev: str | None, folder: Path):
    """A traveller built by the bench's ``traveller()``, its package from ``rev`` (None: the working tree)."""
    root = ROOT
    if rev is not None:
        root = folder / rev.replace("/", "_")
        package = root / "tool_suites" / "travel"
        package.mkdir(parents=True)
        (root / "tool_suites" / "__init__.py").write_text("", encoding="utf-8")
        names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:tool_suites/travel/"], cwd=ROOT,
                               check=True, capture_output=True, text=True).stdout.split()
        for name in names:
            shown = subprocess.run(["git", "show", f"{rev}:tool_suites/travel/{name}"], cwd=ROOT, check=True,
                                   capture_output=True, text=True)
            (package / name).write_text(shown.stdout, encoding="utf-8")
    for name in [m for m in sys.modules if m == "tool_suites" or m.startswith("tool_suites.")]:
        del sys.modules[name]
    sys.path.insert(0, str(root))
    try:
        return corpus.traveller()
    finally:
        sys.path.remove(str(root))


def reading(traveller, question: str) -> tuple:
    traveller.ask(question)
    event = traveller.events[-1]
    return event["type"], tuple(event.get("slots", ())), event.get("object")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--against", required=True, help="a git revision whose reader to compare with")
    a = ap.parse_args()
    asked = questions(a.run_dir)
    with tempfile.TemporaryDirectory() as tmp:
        old = traveller_at(a.against, Path(tmp))
        before = [reading(old, q) for q in asked]
    new = traveller_at(None, ROOT)
    after = [reading(new, q) for q in asked]
    moved = [(q, b, n) for q, b, n in zip(asked, before, after, strict=True) if b != n]
    print(f"{len(asked)} questions ({len(set(asked))} distinct) in {a.run_dir}; "
          f"{len(moved)} read differently than at {a.against}")
    for question, b, n in moved:
        print(f"  {question[:160]!r}: {b} -> {n}")


if __name__ == "__main__":
    main()
