"""Faults of the model's server process are episodes, never crashes of topoeval.

Real llama-server processes, really signalled: a crash (SIGSEGV) mid-run is restarted and the run
completes; a server that keeps crashing ends its episodes as errors (exit 3, no traceback); a hung
server (SIGSTOP) is killed and replaced; and the server never outlives the run, however topoeval
ends (normal end, Ctrl-C, SIGTERM, kill -9).
"""

import json
import os
import signal
import subprocess
import threading
import time

import pytest

import topoeval
from tests.models.llama_procs import alive, llama_servers, require_server, wait_for
from topoeval.models.options import ModelOptions

pytestmark = pytest.mark.local_model

RUN = dict(tasks=2, shots=[0], max_turns=3, max_tokens=32)


@pytest.fixture(scope="module", autouse=True)
def gguf():
    return require_server()


def episodes(run_dir):
    return [json.loads(l) for l in (run_dir / "episodes.jsonl").read_text().splitlines()]


class Saboteur(threading.Thread):
    """Signals the llama-server processes this test's run starts: the first ``times`` of them, each
    ``after_s`` seconds after it appears."""

    def __init__(self, sig: int, times: int = 1, after_s: float = 2.0):
        super().__init__(daemon=True)
        self.sig, self.times, self.after_s = sig, times, after_s
        self.before = llama_servers()
        self.hit: list[int] = []
        self.seen: set[int] = set()
        self.done = threading.Event()

    def run(self):
        deadline = time.monotonic() + 300
        while len(self.hit) < self.times and not self.done.is_set() and time.monotonic() < deadline:
            new = llama_servers() - self.before - set(self.hit)
            self.seen |= new
            if new:
                pid = min(new)
                time.sleep(self.after_s)
                try:
                    os.kill(pid, self.sig)
                    self.hit.append(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)


def test_a_conversation_longer_than_the_servers_context_is_the_models_limit_not_the_end_of_the_run(tmp_path):
    """llama-server refuses a prompt longer than its context with an HTTP 400 of its own wording: that is
    the model's limit (the episode ends as ``limit:context_window``, scored), not a rejected request that
    would stop the run. Travel's first prompt (seven tools) is longer than 512 tokens."""
    res = topoeval.run_protocol("transfer_matrix", ["smollm2-135m"], tmp_path / "r", tasks=2, shots=[0],
                                topologies=["travel", "wiki"], max_turns=2, max_tokens=16,
                                model_options=ModelOptions(n_ctx=512, n_threads=1))
    eps = [e for e in episodes(res.run_dir) if e["topology"] == "travel"]
    assert [e["status"] for e in eps] == ["limit:context_window"] * 2, [e["errors"] for e in eps]
    assert [e["scores"]["success"] for e in eps] == [0.0, 0.0] and res.errors == 0


@pytest.mark.slow
def test_a_server_that_crashes_mid_run_is_restarted_and_the_run_completes(tmp_path):
    before = llama_servers()
    saboteur = Saboteur(signal.SIGSEGV, times=1, after_s=3.0)
    saboteur.start()
    res = topoeval.run_protocol("wiki_hops", ["smollm2-135m"], tmp_path / "r", **RUN)
    saboteur.done.set()
    eps = episodes(tmp_path / "r")
    assert saboteur.hit, "the server was never signalled"
    assert res.errors == 0 and all(e["status"] != "error" for e in eps), [e["errors"] for e in eps]
    assert len(eps) == 6  # wiki_hops: 3 topologies x 2 tasks
    assert llama_servers() == before


def test_a_server_that_keeps_crashing_ends_episodes_as_errors_and_exit_3(tmp_path, topoeval_cmd):
    before = llama_servers()
    saboteur = Saboteur(signal.SIGSEGV, times=20, after_s=0.0)
    saboteur.start()
    proc = subprocess.run([*topoeval_cmd, "run", "wiki_hops", "-m", "smollm2-135m", "--tasks", "2", "--max-turns", "2",
                           "--max-tokens", "16", "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=300)
    saboteur.done.set()
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Segmentation" not in proc.stderr, proc.stderr[-2000:]
    assert "ended in error" in proc.stderr
    eps = episodes(tmp_path / "r")
    assert eps and all(e["status"] == "error" for e in eps)
    assert any("crashed with SIGSEGV" in " ".join(e["errors"]) for e in eps), [e["errors"] for e in eps]
    assert llama_servers() == before


@pytest.mark.slow
def test_a_hung_server_is_killed_and_replaced(tmp_path):
    before = llama_servers()
    saboteur = Saboteur(signal.SIGSTOP, times=1, after_s=3.0)
    saboteur.start()
    res = topoeval.run_protocol("wiki_hops", ["smollm2-135m"], tmp_path / "r", model_options=ModelOptions(timeout_s=5),
                                **RUN)
    saboteur.done.set()
    assert saboteur.hit
    assert res.errors == 0, [e["errors"] for e in episodes(tmp_path / "r")]
    assert not os.path.exists(f"/proc/{saboteur.hit[0]}") or saboteur.hit[0] not in llama_servers()
    assert llama_servers() == before


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_the_server_does_not_outlive_topoeval(tmp_path, topoeval_cmd, sig):
    before = llama_servers()
    proc = subprocess.Popen([*topoeval_cmd, "run", "wiki_hops", "-m", "smollm2-135m", "--tasks", "3",
                             "--out", str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: llama_servers() - before or proc.poll() is not None, what="the server to start")
        assert proc.poll() is None, proc.communicate()
        time.sleep(1)
        started = llama_servers() - before
        proc.send_signal(getattr(signal, sig))
        proc.communicate(timeout=60)
        wait_for(lambda: not alive(started), timeout_s=30, what="the server to stop")
    finally:
        if proc.poll() is None:
            proc.kill()
