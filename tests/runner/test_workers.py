"""--workers K: K local processes over one run folder, merged at the end; SIGTERM stops them all and
keeps their episodes; the same command resumes."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.core.messages import final
from topoeval.core.policy import Policy
from topoeval.runner.store import episode_files, read_records


def test_k_workers_give_the_unsharded_summary(tmp_path, echo_protocol, fixture_suites):
    proto = echo_protocol(n=12, samples=2)
    whole = topoeval.run_protocol(proto, ["oracle", "random"], tmp_path / "a" / "run", suites_dirs=[fixture_suites])
    res = topoeval.run_protocol(proto, ["oracle", "random"], tmp_path / "b" / "run", suites_dirs=[fixture_suites],
                                workers=3)
    assert res.new_episodes == whole.new_episodes == 2 * 2 * 12 * 2
    assert (tmp_path / "b" / "run" / "summary.json").read_bytes() == (tmp_path / "a" / "run" / "summary.json").read_bytes()
    names = sorted(p.name for p in episode_files(tmp_path / "b" / "run"))
    assert names == ["episodes.jsonl", *(f"episodes.shard-{i}-of-3.jsonl" for i in (1, 2, 3))]
    assert len(read_records(tmp_path / "b" / "run" / "episodes.jsonl")) == res.new_episodes  # merged
    again = topoeval.run_protocol(proto, ["oracle", "random"], tmp_path / "b" / "run", suites_dirs=[fixture_suites],
                                  workers=3)
    assert again.new_episodes == 0 and again.reused_episodes == res.new_episodes


class _Local(Policy):
    name = "local"

    async def act(self, messages, tools, sampling, ctx):
        return final("x")


def test_models_that_cannot_reach_a_worker_are_one_line(tmp_path, echo_protocol, fixture_suites):
    class Inside(_Local):  # defined in a function: pickle cannot send it to another process
        pass

    with pytest.raises(UserError, match="workers needs arguments that can be sent to another process"):
        topoeval.run_protocol(echo_protocol(n=2), [Inside()], tmp_path / "run", suites_dirs=[fixture_suites], workers=2)


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _cmdline(pid: int) -> str:
    """A process's command line; "" once it has gone (a child can exit between listing and reading)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
def test_sigterm_stops_every_worker_and_keeps_their_episodes(tmp_path, echo_protocol, fixture_suites, topoeval_cmd):
    proto = echo_protocol(n=40, delay=0.3)  # 80 episodes of about 0.3 s each, 2 at a time per worker: 6 s
    out = tmp_path / "run"
    cmd = [*topoeval_cmd, "run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out),
           "--workers", "2", "--concurrency", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline:
        workers = [c for c in _children(proc.pid) if "spawn_main" in _cmdline(c)] if _alive(proc.pid) else []
        done = sum(len(read_records(p)) for p in out.glob("episodes.shard-*-of-2.jsonl")) if out.exists() else 0
        if len(workers) == 2 and done >= 4:
            break
        time.sleep(0.05)
    assert len(workers) == 2, "the two workers did not start"
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    time.sleep(0.5)
    assert not any(_alive(w) for w in workers)  # every worker stopped with the parent
    kept = {k: r for p in out.glob("episodes.shard-*-of-2.jsonl") for k, r in read_records(p).items()}
    assert 4 <= len(kept) < 80
    assert all(r["status"] == "done" for r in kept.values())
    assert not (out / "summary.json").exists()
    # the same command resumes: only the rest run, and the merged run has all 80
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"({80 - len(kept)} new episodes, {len(kept)} resumed)" in res.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert sum(c["n_episodes"] for c in summary["cells"]) == 80


# --- workers not given: auto_workers ------------------------------------------------------------------

def _config(models, **settings):
    from topoeval.runner.config import RunConfig

    return RunConfig.build("wiki_hops", models, None, **settings)


def test_auto_workers_splits_only_direct_models_at_high_concurrency():
    from topoeval.runner.workers import auto_workers

    direct = ["direct:a", "direct:b"]
    assert auto_workers(_config(direct, concurrency=256), cores=8) == 2
    assert auto_workers(_config(direct, concurrency=1024), cores=8) == 7  # one core left
    assert auto_workers(_config(direct, concurrency=256), cores=2) == 1  # 2 workers on 2 cores ran slower
    assert auto_workers(_config(direct), cores=8) == 1  # the direct default, 64
    assert auto_workers(_config(direct, concurrency=127), cores=8) == 1
    assert auto_workers(_config(["oracle"], concurrency=256), cores=8) == 1  # no server to wait on
    assert auto_workers(_config(["direct:a", "oracle"], concurrency=256), cores=8) == 1
    assert auto_workers(_config(direct, concurrency=256, workers=1), cores=8) == 1  # the user chose
    assert auto_workers(_config(direct, concurrency=256, shard="1/2"), cores=8) == 1


class _Answers(__import__("tests.chat_server", fromlist=["ThreadedChatServer"]).ThreadedChatServer):
    """Answers every request at once with a final answer, counting the requests in flight."""

    def __init__(self):
        self.in_flight = self.peak = 0

    async def _chat(self, request):
        import asyncio

        from aiohttp import web

        await request.json()
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.5)  # long enough for both workers' first waves to be in flight together
        self.in_flight -= 1
        return web.json_response({"choices": [{"message": {"role": "assistant", "content": "done"}}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 1}})


@pytest.mark.slow
def test_direct_models_at_high_concurrency_run_in_workers_sharing_it(tmp_path, echo_protocol, fixture_suites,
                                                                     monkeypatch):
    from topoeval.models.options import ModelOptions
    from topoeval.runner import workers

    monkeypatch.setattr(workers, "free_cores", lambda: 8)
    server = _Answers()
    server.start()
    try:
        res = topoeval.run_protocol(echo_protocol(n=200), ["direct:m"], tmp_path / "run", suites_dirs=[fixture_suites],
                                    concurrency=256, cache=False,
                                    model_options=ModelOptions(api_base=server.api_base, api_key="x"))
    finally:
        server.stop()
    assert res.new_episodes == 400
    names = sorted(p.name for p in episode_files(tmp_path / "run"))
    assert names == ["episodes.jsonl", "episodes.shard-1-of-2.jsonl", "episodes.shard-2-of-2.jsonl"]
    assert 128 < server.peak <= 256  # two processes of 128 each at once (not 200 each)
