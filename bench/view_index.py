"""How fast `topoeval view` opens a big run: index a generated 100,000-episode run folder.

    python bench/view_index.py --episodes 100000

Runs wiki_to_travel with six reference policies on 5 tasks (60 real episodes), then writes a run
folder whose episodes.jsonl repeats those records under distinct task ids until it holds
--episodes lines, and times what opening the run in the viewer costs: the byte-offset index of
the lines (keys read from each line's text, not the records parsed), the run's payload (headline,
tables, compact index, system prompts) as the script the page loads, and one chunk of records.
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
from topoeval.view.data import Catalogue, as_script

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
        catalogue = Catalogue(big.parent)
        rid = next(iter(catalogue.runs))
        t0, c0 = time.perf_counter(), time.process_time()
        index = catalogue.index(rid)
        t1, c1 = time.perf_counter(), time.process_time()
        payload = as_script(rid, catalogue.run_payload(rid))
        t2 = time.perf_counter()
        chunk = as_script("c", catalogue.chunk_payload(rid, len(index) // 100 // 2))
        t3 = time.perf_counter()
        print(f"{len(index):,} episodes, episodes.jsonl {size / 1e6:.0f} MB: index {t1 - t0:.2f} s "
              f"({c1 - c0:.2f} s of CPU; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores), run payload "
              f"{t2 - t1:.2f} s ({len(payload) / 1e6:.1f} MB), one chunk of 100 records {t3 - t2:.3f} s "
              f"({len(chunk) / 1e3:.0f} kB); opening the run: {t2 - t0:.2f} s")


if __name__ == "__main__":
    main()
