"""Harness throughput against a local OpenAI-compatible server with fixed latency.

    .venv/bin/python bench/throughput.py            # C = 16 and 64, 50 ms latency
    .venv/bin/python bench/throughput.py --embedded # also tokens/s of the embedded model

Each episode is two requests (a tool call, then the answer). The physical limit for N episodes
at concurrency C and latency L is N / (ceil(N / C) * 2L) episodes/s; every path is reported as a
share of it, plus episodes per CPU-second of this (client) process. Paths, side by side in one run:

- raw aiohttp: a bare loop of two POSTs per episode on one pooled session (the reference);
- raw litellm: two ``litellm.acompletion`` calls per episode;
- topoeval via litellm: ``run_protocol`` with model ``openai/bench`` and ``--api-base``;
- topoeval direct: ``run_protocol`` with model ``direct:bench`` (pooled aiohttp).

For the topoeval paths, episodes/s and the share of the limit are taken over the episode phase
(``RunResult.timing["episodes_s"]``); the run's fixed costs — setting up (protocol, tasks) and
writing the summary, report.md, plots and report.html — are printed separately, and "whole run"
gives the share over the whole ``run_protocol`` call. The server runs in its own process.
Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SUITES = ROOT / "tests" / "fixtures" / "suites"
PROTOCOL = ROOT / "bench" / "bench_protocol.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "latency_server.py"), "--port", str(port),
                             "--latency", str(latency)])
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(100):
        try:
            body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "What is stored under k1?"}]})
            req = urllib.request.Request(url + "/chat/completions", data=body.encode(), headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=1).read()
            return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("latency server did not start")


def prompts(n: int) -> list[str]:
    from topoeval.protocol.discovery import SuiteRegistry

    suite = SuiteRegistry([SUITES]).get("echo")
    return [t.prompt for t in suite.tasks(suite.parse_params({}), "test", 1, n)]


async def raw_aiohttp(url: str, ps: list[str], c: int) -> None:
    import aiohttp

    sem = asyncio.Semaphore(c)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def episode(p: str) -> None:
            async with sem:
                msgs = [{"role": "user", "content": p}]
                async with session.post(url + "/chat/completions", json={"model": "bench", "messages": msgs}) as r:
                    call = (await r.json())["choices"][0]["message"]
                msgs += [call, {"role": "tool", "tool_call_id": "c0", "content": "v"}]
                async with session.post(url + "/chat/completions", json={"model": "bench", "messages": msgs}) as r:
                    await r.json()

        await asyncio.gather(*(episode(p) for p in ps))


async def raw_litellm(url: str, ps: list[str], c: int) -> None:
    from topoeval.models.litellm_backend import import_litellm

    litellm = import_litellm()
    sem = asyncio.Semaphore(c)

    async def episode(p: str) -> None:
        async with sem:
            msgs = [{"role": "user", "content": p}]
            r = await litellm.acompletion(model="openai/bench", messages=msgs, api_base=url, api_key="x")
            msgs += [r.choices[0].message.model_dump(), {"role": "tool", "tool_call_id": "c0", "content": "v"}]
            await litellm.acompletion(model="openai/bench", messages=msgs, api_base=url, api_key="x")

    await asyncio.gather(*(episode(p) for p in ps))


def via_topoeval(model: str, url: str, n: int, c: int) -> dict[str, float]:
    import topoeval
    from topoeval.models.options import ModelOptions

    with tempfile.TemporaryDirectory() as out:
        res = topoeval.run_protocol(PROTOCOL, [model], Path(out) / "run", tasks=n, concurrency=c, suites_dirs=[SUITES],
                                    model_options=ModelOptions(api_base=url, api_key="x", tool_mode="native"), cache=False)
        ok = res.cell(model, "echo")["metrics"]["success"]["mean"]
        if ok != 1.0:
            raise RuntimeError(f"{model}: success {ok}, the benchmark episodes did not complete")
        return res.timing


def measure(fn) -> tuple[float, float, dict | None]:
    """(wall seconds, CPU seconds of this process, the run's phase timing for topoeval paths)."""
    w0, c0 = time.perf_counter(), time.process_time()
    timing = fn()
    return time.perf_counter() - w0, time.process_time() - c0, timing


def throughput(latency: float, concurrencies: list[int], per_c: int) -> list[dict]:
    proc, url = start_server(latency)
    rows = []
    try:
        for c in concurrencies:
            n = per_c * c
            ps = prompts(n)
            limit = n / (math.ceil(n / c) * 2 * latency)
            paths = {
                "raw aiohttp": lambda: asyncio.run(raw_aiohttp(url, ps, c)),
                "raw litellm": lambda: asyncio.run(raw_litellm(url, ps, c)),
                "topoeval via litellm": lambda: via_topoeval("openai/bench", url, n, c),
                "topoeval direct": lambda: via_topoeval("direct:bench", url, n, c),
            }
            via_topoeval("direct:bench", url, c, c)  # warm imports and the task generator
            asyncio.run(raw_litellm(url, ps[:c], c))
            for name, fn in paths.items():
                wall, cpu, timing = measure(fn)
                loop = timing["episodes_s"] if timing else wall
                rows.append({"path": name, "C": c, "N": n, "episodes_per_s": n / loop, "share_of_limit": n / loop / limit,
                             "whole_run_share": n / wall / limit, "episodes_per_cpu_s": n / cpu if cpu else float("inf"),
                             "fixed_s": (timing["setup_s"] + timing["reports_s"]) if timing else 0.0})
    finally:
        proc.terminate()
        proc.wait()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--rounds", type=int, default=8, help="N = rounds x C episodes per path")
    args = ap.parse_args()

    rows = throughput(args.latency, args.concurrency, args.rounds)
    ref = {r["C"]: r for r in rows if r["path"] == "raw aiohttp"}
    lit = {r["C"]: r for r in rows if r["path"] == "raw litellm"}
    print(f"latency {args.latency * 1000:.0f} ms, 2 requests per episode, {os.cpu_count()} cores")
    print(f"{'path':22s} {'C':>4s} {'N':>5s} {'episodes/s':>11s} {'share of limit':>15s} {'vs aiohttp':>11s} "
          f"{'vs litellm':>11s} {'episodes/CPU-s':>15s} {'whole run':>10s} {'fixed s':>8s}")
    for r in rows:
        print(f"{r['path']:22s} {r['C']:4d} {r['N']:5d} {r['episodes_per_s']:11.1f} {r['share_of_limit']:15.2f} "
              f"{r['episodes_per_s'] / ref[r['C']]['episodes_per_s']:11.2f} "
              f"{r['episodes_per_s'] / lit[r['C']]['episodes_per_s']:11.2f} {r['episodes_per_cpu_s']:15.1f} "
              f"{r['whole_run_share']:10.2f} {r['fixed_s']:8.2f}")


if __name__ == "__main__":
    main()
