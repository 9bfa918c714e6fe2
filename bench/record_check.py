"""What checking every episode record as it is read costs (issue 56): one command, a ratio.

    .venv/bin/python bench/record_check.py              # 2,000 tasks: 12,000 episodes (about a minute)
    .venv/bin/python bench/record_check.py --tasks 200  # a quick look

Runs ``wiki_hops -m oracle -m random --shots 0 --tasks N`` (the harness alone, as bench/scale.py does), then
reads its episodes.jsonl with ``topoeval.runner.store.read_episodes`` ``--repeat`` times two ways, one after
the other in the same process:

- **checked**: as topoeval reads (every line parsed and checked by ``records.record_problem``, the one
  pydantic model of an episode record);
- **reference**: the same reader with the check reduced to what readers looked at before it (a JSON
  object with a string key), patched in for the measurement only.

Prints the median seconds of a full read each way, the cost per record in microseconds and the ratio
checked / reference. Figures depend on the machine and what else runs on it: compare the two columns of
one run, not runs on different machines.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import topoeval
from topoeval.runner import episode_file
from topoeval.runner.store import read_episodes


def _key_only(record: Any) -> str | None:
    """The reference: what readers checked before each record was validated."""
    return None if isinstance(record, dict) and isinstance(record.get("key"), str) else "no key"


def _time_reads(run: Path, repeat: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        n = len(read_episodes(run))
        times.append(time.perf_counter() - start)
    return statistics.median(times), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=2000, help="tasks per topology (6 episodes a task)")
    ap.add_argument("--repeat", type=int, default=5, help="full reads timed each way (the median is kept)")
    ap.add_argument("--run", type=Path, help="time this run folder instead of making one")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = Path(tmp) / "run"
            topoeval.run_protocol("wiki_hops", ["oracle", "random"], run, tasks=args.tasks, shots=[0],
                                  progress=False)
        size = (run / "episodes.jsonl").stat().st_size
        checked, n = _time_reads(run, args.repeat)
        original = episode_file.record_problem
        episode_file.record_problem = _key_only  # type: ignore[assignment]
        try:
            reference, _ = _time_reads(run, args.repeat)
        finally:
            episode_file.record_problem = original  # type: ignore[assignment]
    print(f"{n} records, {size / 1e6:.1f} MB, median of {args.repeat} full reads")
    print(f"{'read':12} {'seconds':>8} {'us/record':>10}")
    print(f"{'reference':12} {reference:8.3f} {reference / n * 1e6:10.1f}")
    print(f"{'checked':12} {checked:8.3f} {checked / n * 1e6:10.1f}")
    print(f"check: {(checked - reference) / n * 1e6:.1f} us a record; checked / reference = {checked / reference:.2f}")


if __name__ == "__main__":
    main()
