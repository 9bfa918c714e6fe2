"""How the harness scales with the size of a run, in one command (issue 48's table).

    .venv/bin/python bench/scale.py            # 24k and 240k episodes (minutes; a quiet machine)
    .venv/bin/python bench/scale.py --small    # 2.4k and 24k: checks that it works

Prints, in one table:

- **episodes/s and peak RSS** of ``topoeval run wiki_hops -m oracle -m random --shots 0 --tasks N``
  (reference policies: the harness alone is measured) at two sizes, each in a fresh process; the
  peak RSS is that process's ``ru_maxrss`` (``os.wait4``: the kernel's figure for that one child),
  episodes/s is over the episode phase (``RunResult.timing["episodes_s"]``);
- **summary + reports**: the seconds from the end of the episodes to the end of the run (summary.json,
  report.md, plots, report.html) at each size;
- **merge**: ``topoeval merge RUN --out NEW`` of each size's folder in a fresh process (every record
  read, the merged episodes.jsonl, summary and reports written): its seconds and peak RSS;
- **resume start-up**: the larger run done, the same command with one model more (``-m noop``) in a
  fresh process: the seconds from its start to its first new episode on disk (then it is stopped);
- **the remote path**: ``bench/throughput.py``'s server (50 ms a request, two requests an episode):
  raw aiohttp's share of the physical limit, and topoeval's ``direct:`` path's share over the
  whole run with the run's fixed costs removed by differencing two run sizes, at C = 64 and 256.

The figures depend on the machine and on what else runs on it: run it on a quiet one, and compare
runs made one after the other on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from throughput import PROTOCOL, SUITES, prompts, raw_aiohttp, start_server  # noqa: E402

#: episodes per task of ``wiki_hops -m oracle -m random --shots 0``: 2 models x 3 topologies x 1 sample
EPISODES_PER_TASK = 6
CLI = [sys.executable, "-c", "from topoeval.cli import main; main()"]


def child_run(tasks: int, out: str, models: list[str]) -> None:
    """In the child: one run, its timing as one JSON line on stdout."""
    import warnings

    import topoeval

    warnings.simplefilter("ignore")
    started = time.perf_counter()
    res = topoeval.run_protocol("wiki_hops", models, out, tasks=tasks, shots=[0])
    total = time.perf_counter() - started
    t = res.timing
    print(json.dumps({"episodes": res.new_episodes, "setup_s": t["setup_s"], "episodes_s": t["episodes_s"],
                      "after_s": total - t["setup_s"] - t["episodes_s"], "total_s": total}))


def sized_run(tasks: int, out: Path) -> dict[str, float]:
    """One size in a fresh process: its timing and its peak RSS (MB)."""
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(tasks), str(out)], stdout=subprocess.PIPE,
                            text=True)
    stdout = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"the run of {tasks} tasks failed (exit {proc.returncode})")
    row = json.loads(stdout.strip().splitlines()[-1])
    return {**row, "rss_mb": usage.ru_maxrss / 1024}


def merge_run(run: Path, out: Path) -> dict[str, float]:
    """``topoeval merge RUN --out OUT`` in a fresh process: its seconds and peak RSS (MB)."""
    started = time.perf_counter()
    proc = subprocess.Popen([*CLI, "merge", str(run), "--out", str(out)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"the merge of {run} failed (exit {os.waitstatus_to_exitcode(status)})")
    return {"merge_s": time.perf_counter() - started, "merge_rss_mb": usage.ru_maxrss / 1024}


def resume_startup(tasks: int, out: Path) -> float:
    """Seconds from the start of a resumed run with one model more to its first new episode on disk."""
    episodes = out / "episodes.jsonl"
    before = episodes.stat().st_size
    started = time.perf_counter()
    proc = subprocess.Popen([*CLI, "run", "wiki_hops", "-m", "oracle", "-m", "random", "-m", "noop", "--shots", "0",
                             "--tasks", str(tasks), "--out", str(out), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while episodes.stat().st_size == before:
            if proc.poll() is not None:
                raise RuntimeError(f"the resumed run ended (exit {proc.returncode}) before a new episode")
            time.sleep(0.005)
        return time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait()


def remote_shares(url: str, c: int, rounds: tuple[int, int], latency: float) -> dict[str, float]:
    """raw aiohttp's share of the limit, and topoeval direct's over the whole run, differenced over two sizes
    (``rounds`` x C episodes: the limit of each is rounds x 2 x latency seconds)."""
    import topoeval
    from topoeval.models.options import ModelOptions

    def whole_run(n: int) -> float:
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            res = topoeval.run_protocol(PROTOCOL, ["direct:bench"], Path(folder) / "run", tasks=n, concurrency=c,
                                        suites_dirs=[SUITES], cache=False,
                                        model_options=ModelOptions(api_base=url, api_key="x", tool_mode="native"))
            wall = time.perf_counter() - started
        if res.cell("direct:bench", "echo")["metrics"]["success"]["mean"] != 1.0:
            raise RuntimeError("the benchmark episodes did not complete")
        return wall

    small, large = rounds
    ps = prompts(large * c)
    asyncio.run(raw_aiohttp(url, ps[:c], c))  # warm
    whole_run(c)
    started = time.perf_counter()
    asyncio.run(raw_aiohttp(url, ps, c))
    raw_wall = time.perf_counter() - started
    walls = [whole_run(r * c) for r in (small, large)]
    per_round = (walls[1] - walls[0]) / (large - small)  # a round: C episodes, 2 x latency at the limit
    return {"raw": large * 2 * latency / raw_wall, "direct": 2 * latency / per_round,
            "direct_fixed_s": walls[0] - small * per_round}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="2.4k and 24k episodes instead of 24k and 240k")
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--skip-remote", action="store_true", help="leave out the remote path's shares")
    ap.add_argument("--child", nargs=2, metavar=("TASKS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_run(int(args.child[0]), args.child[1], ["oracle", "random"])
        return

    sizes = [400, 4000] if args.small else [4000, 40000]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for tasks in sizes:
            out = Path(folder) / f"run-{tasks}"
            rows.append({"tasks": tasks, **sized_run(tasks, out), **merge_run(out, Path(folder) / f"merged-{tasks}")})
        resume_s = resume_startup(sizes[-1], Path(folder) / f"run-{sizes[-1]}")
    remote = {}
    if not args.skip_remote:
        proc, url = start_server(args.latency)
        try:
            for c, rounds in ((64, (4, 8)), (256, (2, 4))) if args.small else ((64, (8, 16)), (256, (4, 8))):
                remote[c] = remote_shares(url, c, rounds, args.latency)
        finally:
            proc.terminate()
            proc.wait()

    print(f"bench/scale.py{' --small' if args.small else ''}: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    print(f"{'episodes':>9s} {'episodes/s':>11s} {'peak RSS MB':>12s} {'setup s':>8s} {'summary+reports s':>18s} "
          f"{'merge s':>8s} {'merge RSS MB':>13s}")
    for r in rows:
        print(f"{r['episodes']:9d} {r['episodes'] / r['episodes_s']:11.0f} {r['rss_mb']:12.0f} {r['setup_s']:8.1f} "
              f"{r['after_s']:18.1f} {r['merge_s']:8.1f} {r['merge_rss_mb']:13.0f}")
    a, b = rows
    speed = (b["episodes"] / b["episodes_s"]) / (a["episodes"] / a["episodes_s"])
    print(f"ratios {b['episodes']}/{a['episodes']}: episodes/s x {speed:.2f} (goal >= 0.8), "
          f"peak RSS x {b['rss_mb'] / a['rss_mb']:.2f} (goal <= 1.3), merge peak RSS x "
          f"{b['merge_rss_mb'] / a['merge_rss_mb']:.2f}")
    print(f"resume start-up after {b['episodes']} finished episodes, one model more: {resume_s:.1f} s to the first "
          "new episode (goal < 10 s)")
    for c, r in remote.items():
        print(f"remote C={c}: raw aiohttp {r['raw']:.2f} of the limit, topoeval direct (whole run, differenced) "
              f"{r['direct']:.2f} (x {r['direct'] / r['raw']:.2f} of aiohttp; fixed costs {r['direct_fixed_s']:.1f} s)")


if __name__ == "__main__":
    main()
