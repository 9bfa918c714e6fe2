"""What a fresh MCP server costs per episode, on the shipped mcp-server-git example.

For each transport (stdio: the server as a child process; in-process: the server object in this
process) it builds ROUNDS worlds of the first git task and times the phases every episode pays:
the scratch repository (a copy of the fixture, built once per process), the server's start (up
to its tool listing), one tool call (git_status), and the close (server gone, folder deleted).
Prints the median of each in ms.

    .venv/bin/python bench/mcp_server_cost.py [--rounds 10]

Needs topoeval[mcp].
"""

from __future__ import annotations

import argparse
import statistics
import time

from topoeval.protocol.discovery import SuiteRegistry

STDIO = {
    "server": {"command": ["{python}", "-m", "mcp_server_git", "--repository", "{workdir}"],
               "env": {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}},
    "tasks": "git/tasks.yaml", "overlay": "git/overlay.yaml",
}


def measure(suite, params: dict, rounds: int) -> dict[str, float]:
    import shutil
    import tempfile
    from pathlib import Path

    from topoeval_suite_mcp.world import materialize

    task = suite.generate(suite.parse_params(params), "test", 0, 0)
    phases: dict[str, list[float]] = {"scratch": [], "start": [], "call": [], "close": []}
    for _ in range(rounds + 1):  # the first round builds the fixture's template: not counted
        scratch = Path(tempfile.mkdtemp())
        t = time.perf_counter()
        materialize(task.data["fixture"], task.data["env"], scratch)
        copy = time.perf_counter() - t
        shutil.rmtree(scratch)
        t0 = time.perf_counter()
        world = suite.make_world(task)  # a scratch copy + the server started, up to its tool listing
        start = time.perf_counter() - t0 - copy
        t1 = time.perf_counter()
        world.call("git_status", {})
        call = time.perf_counter() - t1
        t2 = time.perf_counter()
        world.close()
        close = time.perf_counter() - t2
        if _:
            for k, v in zip(phases, (copy, start, call, close)):
                phases[k].append(v)
    return {k: statistics.median(v) * 1000 for k, v in phases.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    suite = SuiteRegistry().get("mcp")
    print(f"median ms over {args.rounds} episodes   scratch   start    call   close   total")
    for name, params in (("stdio", STDIO), ("in-process", {})):
        m = measure(suite, params, args.rounds)
        print(f"{name:<35}{m['scratch']:>8.0f}{m['start']:>8.0f}{m['call']:>8.1f}{m['close']:>8.0f}{sum(m.values()):>8.0f}")


if __name__ == "__main__":
    main()
