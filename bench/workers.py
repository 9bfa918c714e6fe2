"""Speed-up of ``--workers K`` over one process, against local fixed-latency servers.

    .venv/bin/python bench/workers.py                      # K = 1 2 4, 4096 episodes, C = 256 per worker
    .venv/bin/python bench/workers.py --workers 1 2 --episodes 1024 --servers 2

Each episode is two requests (a lookup call, then the answer) to ``direct:bench``; the servers
(``bench/latency_server.py``, one process each, 127.0.0.1 only) are given as replicas
(``--api-base`` several times), so they are not the bottleneck. Concurrency is per worker, high
enough that one process is bound by its own CPU (about 500 episodes/s), not by the latency: the
physical limit of N episodes at total concurrency K x C and latency L is
N / (ceil(N / (K x C)) x 2L). For each K the whole ``run_protocol`` call is timed: starting the
workers, the episodes, the merge and the reports. Each K runs ``--rounds`` times into a fresh
folder; the best round is reported (the others are noise from whatever else runs on the machine).
The figures depend on the cores free: K workers need K cores plus the servers'.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from throughput import PROTOCOL, SUITES, start_server  # noqa: E402


def one_run(k: int, urls: list[str], n: int, c: int) -> dict[str, float]:
    import topoeval
    from topoeval.models.options import ModelOptions

    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        res = topoeval.run_protocol(PROTOCOL, ["direct:bench"], Path(out) / "run", tasks=n, concurrency=c,
                                    suites_dirs=[SUITES], workers=k, cache=False,
                                    model_options=ModelOptions(api_base=",".join(urls), api_key="x", tool_mode="native"))
        wall = time.perf_counter() - started
    cell = res.cell("direct:bench", "echo")
    if cell["metrics"]["success"]["mean"] != 1.0 or cell["n_episodes"] != n:
        raise RuntimeError(f"K={k}: {cell['n_episodes']} episodes, success {cell['metrics']['success']['mean']}")
    return {"wall_s": wall, "episodes_per_s": n / wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--episodes", type=int, default=4096)
    ap.add_argument("--concurrency", type=int, default=256, help="concurrent episodes per worker")
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--servers", type=int, default=4, help="latency-server processes (replicas)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    servers = [start_server(args.latency) for _ in range(args.servers)]
    urls = [url for _, url in servers]
    rows = []
    try:
        one_run(1, urls, min(args.episodes, 256), args.concurrency)  # warm the imports and the task generator
        for k in args.workers:
            best = max((one_run(k, urls, args.episodes, args.concurrency) for _ in range(args.rounds)),
                       key=lambda r: r["episodes_per_s"])
            limit = args.episodes / (math.ceil(args.episodes / (k * args.concurrency)) * 2 * args.latency)
            rows.append({"K": k, **best, "share_of_limit": best["episodes_per_s"] / limit})
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait()
    base = next((r["episodes_per_s"] for r in rows if r["K"] == 1), rows[0]["episodes_per_s"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.episodes} episodes, 2 requests each, latency {args.latency * 1000:.0f} ms, C = {args.concurrency} per worker, "
          f"{args.servers} server processes, {os.cpu_count()} cores, load average {load:.1f} at the end")
    print(f"{'K':>3s} {'wall s':>8s} {'episodes/s':>11s} {'speed-up':>9s} {'share of limit':>15s}")
    for r in rows:
        print(f"{r['K']:3d} {r['wall_s']:8.2f} {r['episodes_per_s']:11.1f} {r['episodes_per_s'] / base:9.2f} "
              f"{r['share_of_limit']:15.2f}")


if __name__ == "__main__":
    main()
