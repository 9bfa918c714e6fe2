"""Does a change to the traveller's reader move any episode of a run? Two readers on a run's own questions.

    .venv/bin/python bench/traveller_readers.py RUN_DIR --against REV     # e.g. a run folder, a commit

Every ``ask_user`` question in ``RUN_DIR``'s episodes (``episodes*.jsonl``, found below it) is read by the
travel suite's reader as it is now and as it was at ``REV`` (``tool_suites/travel/`` from git history);
the questions read differently are printed. None read differently means the change cannot have moved
those episodes' scores (the traveller's answers, and so the rest of each episode, are the same). Each
question is read in its own episode's world: the task is rebuilt from the run's ``run.json`` (its
protocol, topology and task id), the episode's calls are replayed in a fresh world up to the question
(so the holds are the episode's), and both readers get that world's flights, cities and airlines. An
episode whose world cannot be rebuilt (no ``run.json``, another suite) is read in the corpus bench's
world (bench/traveller.py: hold H1 on AS12301, its six flights), and counted apart.
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
    return [q for _, q in asked_in(run_dir)]


def asked_in(run_dir: Path) -> list[tuple[dict, str]]:
    """(episode, question) for every ``ask_user`` question of a run folder's episodes, in file order."""
    out = []
    for path in sorted(run_dir.rglob("episodes*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            episode = json.loads(line)
            episode["_folder"] = path.parent
            for call in episode.get("calls") or []:
                question = (call.get("arguments") or {}).get("question")
                if call.get("name") == "ask_user" and isinstance(question, str):
                    out.append((episode, question))
    return out


def tasks_of(folder: Path) -> dict[str, tuple]:
    """{task id: (suite, task)} for the travel topologies of the run whose ``run.json`` is in ``folder``."""
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.protocol.schema import Protocol
    from topoeval.protocol.topology import resolve

    meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    protocol = Protocol.model_validate(meta["protocol"])
    wanted: dict[str, int] = {}
    for path in folder.glob("episodes*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            episode = json.loads(line)
            if episode.get("suite") == "travel":
                index = int(episode["task_id"].split("/")[-1].split("-")[0])
                wanted[episode["topology"]] = max(wanted.get(episode["topology"], 0), index + 1)
    out: dict[str, tuple] = {}
    registry = SuiteRegistry()
    for spec in protocol.topologies():
        if spec.name in wanted:
            topo = resolve(spec, registry)
            for task in topo.tasks("test", protocol.tasks.test.seed, wanted[spec.name]):
                out[f"{spec.name}|{task.id}"] = (topo.suite, task)
    return out


def readings_in_worlds(pairs: list[tuple[dict, str]], old_class) -> tuple[list, list, int]:
    """Both readings of each question, in its episode's replayed world; and how many were read in the corpus
    world for want of one."""
    by_folder: dict[Path, dict] = {}
    before, after, fallback = [], [], 0
    old_corpus, new_corpus = None, None
    episodes: dict[int, dict] = {}
    for episode, _ in pairs:
        episodes[id(episode)] = episode
    for episode in episodes.values():
        folder = episode["_folder"]
        if folder not in by_folder:
            by_folder[folder] = tasks_of(folder) if (folder / "run.json").exists() else {}
        found = by_folder[folder].get(f"{episode.get('topology')}|{episode.get('task_id')}")
        if found is None:
            if old_corpus is None:
                old_corpus, new_corpus = old_class(None), corpus.traveller()
            for call in episode.get("calls") or []:
                question = (call.get("arguments") or {}).get("question")
                if call.get("name") == "ask_user" and isinstance(question, str):
                    before.append(reading(old_corpus, question))
                    after.append(reading(new_corpus, question))
                    fallback += 1
            continue
        suite, task = found
        world = suite.make_world(task)
        old = old_class(world)
        for call in episode.get("calls") or []:
            args = call.get("arguments") or {}
            if call.get("name") == "ask_user" and isinstance(args.get("question"), str):
                before.append(reading(old, args["question"]))
                after.append(reading(world.user, args["question"]))
            try:
                world.call(call.get("name"), args)
            except Exception:  # noqa: BLE001 — a call the episode made in error: the world is unchanged
                pass
    return before, after, fallback


def traveller_at(rev: str | None, folder: Path):
    """The traveller class of ``rev`` (None: the working tree) as a factory: given a travel world, a traveller
    over its truth, flights and (live) holds; given None, the corpus bench's traveller."""
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
        from tool_suites.travel.user import Traveller

        corpus_traveller = corpus.traveller()
    finally:
        sys.path.remove(str(root))

    def make(world):
        if world is None:
            return corpus_traveller
        flights = [{"flight_id": fid, **{k: v for k, v in f.items() if k != "flight_id"}}
                   for fid, f in world.flights.items()]
        return Traveller(world.user.truth, [], world.holds, flights)

    return make


def reading(traveller, question: str) -> tuple:
    traveller.ask(question)
    event = traveller.events[-1]
    return event["type"], tuple(event.get("slots", ())), event.get("object")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--against", required=True, help="a git revision whose reader to compare with")
    a = ap.parse_args()
    pairs = asked_in(a.run_dir)
    with tempfile.TemporaryDirectory() as tmp:
        old_class = traveller_at(a.against, Path(tmp))
        for name in [m for m in sys.modules if m == "tool_suites" or m.startswith("tool_suites.")]:
            del sys.modules[name]
        before, after, fallback = readings_in_worlds(pairs, old_class)
    asked = [q for _, q in pairs]
    moved = [(q, b, n) for q, b, n in zip(asked, before, after, strict=True) if b != n]
    print(f"{len(asked)} questions ({len(set(asked))} distinct) in {a.run_dir}; "
          f"{len(moved)} read differently than at {a.against}"
          + (f" ({fallback} in the corpus world, their episodes' worlds not rebuilt)" if fallback else ""))
    for question, b, n in moved:
        print(f"  {question[:160]!r}: {b} -> {n}")


if __name__ == "__main__":
    main()
