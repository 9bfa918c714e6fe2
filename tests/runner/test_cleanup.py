"""Cleanup on every path of a run: backends, the episode file, the response cache and the folder's lock
are closed whatever fails (a corrupt cache, an unwritable folder, a full disk, SIGTERM), and the first
error is the one reported."""

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.core.policy import Policy
from topoeval.models.cache import ResponseCache
from topoeval.runner import lock as lock_mod
from topoeval.runner.cleanup import Cleanup
from topoeval.runner.store import EpisodeStore


class Tracked(Policy):
    """The oracle behind a backend that records whether it was closed (as a local server would be stopped)."""

    name = "tracked"

    def __init__(self):
        from topoeval.policies.reference import OraclePolicy

        self.oracle, self.closed = OraclePolicy(), 0

    async def act(self, messages, tools, sampling, ctx):
        return await self.oracle.act(messages, tools, sampling, ctx)

    async def aclose(self):
        self.closed += 1


async def _closing(order, what, fail=None):
    order.append(what)
    if fail:
        raise fail


def test_cleanup_closes_everything_last_first_and_keeps_the_first_error():
    import asyncio

    order: list[str] = []

    async def go():
        async with Cleanup() as c:
            c.add("a", lambda: _closing(order, "a"))
            c.add("b", lambda: _closing(order, "b", OSError(errno.ENOSPC, "disk full (close)")))
            c.on_error("undo", lambda: order.append("undo"))
            c.add("c", lambda: order.append("c"))
            raise OSError(errno.ENOSPC, "disk full (append)")

    with pytest.raises(OSError, match=r"disk full \(append\)") as caught:
        asyncio.run(go())
    assert order == ["c", "undo", "b", "a"]
    assert caught.value.__notes__ == ["also, closing b failed: OSError: [Errno 28] disk full (close)"]

    async def clean_then_failing_close():
        async with Cleanup() as c:
            c.on_error("undo", lambda: order.append("never"))
            c.add("x", lambda: _closing(order, "x", RuntimeError("x failed")))
            c.add("y", lambda: _closing(order, "y", RuntimeError("y failed")))

    with pytest.raises(RuntimeError, match="y failed") as caught:
        asyncio.run(clean_then_failing_close())
    assert "never" not in order and caught.value.__notes__ == ["also, closing x failed: RuntimeError: x failed"]


def test_a_corrupt_cache_is_one_line_and_leaves_nothing_open(tmp_path, echo_protocol, fixture_suites):
    out = tmp_path / "run"
    out.mkdir()
    (out / "cache.sqlite").write_bytes(b"this is not a database" * 100)
    policy = Tracked()
    with pytest.raises(UserError, match=r"cache.sqlite: the response cache cannot be used \(.*\); delete it") as err:
        topoeval.run_protocol(echo_protocol(n=1), [policy], out, suites_dirs=[fixture_suites])
    assert "\n" not in str(err.value) and policy.closed == 1 and not lock_mod._HELD
    (out / "cache.sqlite").unlink()  # the fix the line names
    res = topoeval.run_protocol(echo_protocol(n=1), [Tracked()], out, suites_dirs=[fixture_suites])
    assert res.new_episodes == 2


def test_an_unwritable_run_folder_is_one_line_and_closes_the_backends(tmp_path, echo_protocol, fixture_suites):
    blocker = tmp_path / "file"
    blocker.write_text("")
    policy = Tracked()
    with pytest.raises(UserError, match=r"file/run: cannot be written \("):
        topoeval.run_protocol(echo_protocol(n=1), [policy], blocker / "run", suites_dirs=[fixture_suites])
    assert policy.closed == 1 and not lock_mod._HELD


def test_a_full_disk_reports_the_first_error_and_still_closes_the_rest(tmp_path, echo_protocol, fixture_suites,
                                                                       monkeypatch):
    closed: list[str] = []
    real_cache_close = ResponseCache.close

    def full(self, record):
        raise OSError(errno.ENOSPC, "No space left on device (writing an episode)")

    def full_on_close(self):
        closed.append("store")
        if self._fd >= 0:  # the file is opened for appending at its first record
            os.close(self._fd)
        raise OSError(errno.ENOSPC, "No space left on device (syncing the episode file)")

    monkeypatch.setattr(EpisodeStore, "append", full)
    monkeypatch.setattr(EpisodeStore, "close", full_on_close)
    monkeypatch.setattr(ResponseCache, "close", lambda self: (closed.append("cache"), real_cache_close(self)))
    policy = Tracked()
    with pytest.raises(OSError, match=r"\(writing an episode\)") as caught:
        topoeval.run_protocol(echo_protocol(n=1), [policy], tmp_path / "run", suites_dirs=[fixture_suites])
    assert caught.value.errno == errno.ENOSPC
    assert any("closing the episode file failed" in note and "syncing" in note for note in caught.value.__notes__)
    assert closed == ["cache", "store"] and policy.closed == 1 and not lock_mod._HELD


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_of_a_run_with_workers_leaves_no_process_and_a_resumable_folder(tmp_path, echo_protocol,
                                                                                 fixture_suites, topoeval_cmd):
    out = tmp_path / "run"
    proto = echo_protocol(n=20, delay=0.05)
    cmd = [*topoeval_cmd, "run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out),
           "--workers", "2", "--concurrency", "1", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while sum(p.read_bytes().count(b"\n") for p in out.glob("episodes.shard-*.jsonl")) < 4:
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    children = _children(proc.pid)
    assert children  # the two workers (and multiprocessing's helper)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "run the same command again to resume" in err and "Traceback" not in err
    time.sleep(0.5)
    assert not [pid for pid in children if _alive(pid)]
    finished = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    keys = [json.loads(line)["key"] for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(set(keys)) == 40
