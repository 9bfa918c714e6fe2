"""How fast `topoeval view` opens a big run: index a generated 100,000-episode run folder.

    python bench/view_index.py --episodes 100000

Runs wiki_to_travel with six reference policies on 5 tasks (60 real episodes), then writes a run
folder whose episodes.jsonl repeats those records under distinct task ids until it holds
--episodes lines, and times what opening the run in the viewer costs, as the server does it: the
run's first page (the byte-offset index of its first FIRST lines, keys read from each line's text,
not the records parsed, and the payload the page draws it from), then the whole run (the index read
on to the end, and its payload, which the page asks for next), and one chunk of records. The whole
index built in one go (what `topoeval view --export` does) is timed on its own at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import topoeval
from topoeval.view.data import FIRST, Catalogue, as_script
from topoeval.view.index import EpisodeIndex

MODELS = ["oracle", "random", "oracle-no-ask", "oracle-no-priority", "oracle-reckless", "oracle-serial"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=100_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp) / "seed"
        topoeval.run_protocol("wiki_to_travel", MODELS, seed, tasks=5, shots=[0])
        lines = (seed / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
        big = Path(tmp) / "results" / "big"
        big.mkdir(parents=True)
        for name in ("run.json", "summary.json"):
            shutil.copy(seed / name, big / name)
        with open(big / "episodes.jsonl", "w", encoding="utf-8") as fh:
            for n in range(args.episodes):
                rec = json.loads(lines[n % len(lines)])
                copy = n // len(lines)
                rec["task_id"] = rec["task_id"].replace("/test/", f"/test/{copy}x")
                rec["key"] = "|".join([rec["model"], rec["baseline"], rec["topology"], rec["task_id"],
                                       str(rec["sample"])])
                fh.write(json.dumps(rec) + "\n")
        size = (big / "episodes.jsonl").stat().st_size
        catalogue = Catalogue(big.parent, first=FIRST)
        rid = next(iter(catalogue.runs))
        t0, c0 = time.perf_counter(), time.process_time()
        first = as_script(rid, catalogue.run_payload(rid, whole=False))
        t1, c1 = time.perf_counter(), time.process_time()
        whole = as_script(rid, catalogue.run_payload(rid))
        t2, c2 = time.perf_counter(), time.process_time()
        n = len(catalogue.index(rid))
        chunk = as_script("c", catalogue.chunk_payload(rid, n // 100 // 2))
        t3 = time.perf_counter()
        c4 = time.process_time()
        t4 = time.perf_counter()
        EpisodeIndex.build(big)
        t5, c5 = time.perf_counter(), time.process_time()
        print(f"{n:,} episodes, episodes.jsonl {size / 1e6:.0f} MB (load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores): the run's first page ({FIRST:,} episodes) {t1 - t0:.3f} s ({c1 - c0:.3f} s of "
              f"CPU, {len(first) / 1e3:.0f} kB); the whole run {t2 - t1:.2f} s more ({c2 - c1:.2f} s of CPU, "
              f"{len(whole) / 1e6:.1f} MB); one chunk of 100 records {t3 - t2:.3f} s ({len(chunk) / 1e3:.0f} kB); "
              f"the whole index in one go {t5 - t4:.2f} s ({c5 - c4:.2f} s of CPU)")


if __name__ == "__main__":
    main()
