"""--workers K: the workers die with their parent, kill -9 included (issue 56: they went on running and
appending episodes to a run folder nobody was running any more). On Linux the kernel kills them
(PR_SET_PDEATHSIG); everywhere, each worker also polls its parent and ends when it is gone."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.runner.test_workers import _alive, _children, _cmdline
from topoeval.runner.store import read_records


def _wait_gone(pids: list[int], within_s: float) -> list[int]:
    """The pids still alive after waiting up to ``within_s`` seconds for them to go."""
    deadline = time.monotonic() + within_s
    while [p for p in pids if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _sizes(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in out.glob("episodes*.jsonl")}


def test_kill_9_of_the_parent_ends_every_worker_and_their_writes(tmp_path, echo_protocol, fixture_suites,
                                                                   topoeval_cmd):
    proto = echo_protocol(n=60, delay=0.3)  # 120 episodes of 0.3 s, 2 at a time per worker: about 9 s of work
    out = tmp_path / "run"
    cmd = [*topoeval_cmd, "run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out),
           "--workers", "2", "--concurrency", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            workers = [c for c in _children(proc.pid) if "spawn_main" in _cmdline(c)]
            done = sum(len(read_records(p)) for p in out.glob("episodes.shard-*-of-2.jsonl")) if out.exists() else 0
            if len(workers) == 2 and done >= 4:
                break
            time.sleep(0.05)
        assert len(workers) == 2 and proc.poll() is None, "the two workers did not start writing"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert not _wait_gone(workers, 3.0), "workers outlived their parent's kill -9"
        written = _sizes(out)
        time.sleep(1.5)  # a worker still running would have appended several episodes by now
        assert _sizes(out) == written
        kept = {k: r for p in out.glob("episodes.shard-*-of-2.jsonl") for k, r in read_records(p).items()}
        assert 4 <= len(kept) < 120  # what they had finished stays, for the same command to resume
    finally:
        if proc.poll() is None:
            proc.kill()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


#: A parent that starts a child calling die_with_parent with prctl made a no-op (as where it is not
#: available): the child must end through its own polling of its parent alone.
_FALLBACK = textwrap.dedent("""
    import os, subprocess, sys, time
    child = '''
    import os, sys, time
    import topoeval.models.llama_server as llama_server
    from topoeval.runner import workers
    llama_server._die_with_parent = lambda: None  # no PR_SET_PDEATHSIG: the fallback alone
    workers.die_with_parent(int(sys.argv[1]), poll_s=0.1)
    print(os.getpid(), flush=True)
    while True:
        with open(sys.argv[2], "a") as fh:
            fh.write("x")
        time.sleep(0.05)
    '''
    proc = subprocess.Popen([sys.executable, "-c", child, str(os.getpid()), sys.argv[1]], stdout=subprocess.PIPE)
    print(proc.stdout.readline().decode().strip(), flush=True)
    time.sleep(120)
""")


def test_without_prctl_a_worker_ends_by_polling_its_parent(tmp_path):
    marker = tmp_path / "writes.txt"
    parent = subprocess.Popen([sys.executable, "-c", _FALLBACK, str(marker)], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        time.sleep(0.3)
        assert _alive(child) and marker.stat().st_size > 0  # running and writing while its parent lives
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        assert not _wait_gone([child], 3.0), "the child outlived its parent without prctl"
        size = marker.stat().st_size
        time.sleep(0.5)
        assert marker.stat().st_size == size
    finally:
        if parent.poll() is None:
            parent.kill()
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)
