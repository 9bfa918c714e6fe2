"""A run folder is owned while it is written: a second writer ends in one line naming the first."""

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

import topoeval
import topoeval.api
from topoeval.core.errors import UserError
from topoeval.core.policy import Policy
from topoeval.runner import lock as lock_mod

HOLD = ("import sys, time; from topoeval.runner.lock import lock_run; "
        "lock_run(sys.argv[1], sys.argv[2], shard=sys.argv[3] or None); print('held', flush=True); time.sleep(60)")


def _holder(run_dir, doing="run", shard=""):
    """Another process holding ``run_dir`` (until it is killed)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir), doing, shard, "--api-key", "sk-secret"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def _wait_for_lines(path, n, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("run made no progress")


def test_a_second_run_merge_or_report_of_a_running_folder_is_one_line_naming_it(tmp_path, echo_protocol,
                                                                                 fixture_suites, topoeval_cmd, cli):
    out = tmp_path / "run"
    proto = echo_protocol(n=30, delay=0.05)
    cmd = [*topoeval_cmd, "run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out),
           "--concurrency", "1", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_lines(out / "episodes.jsonl", 2, proc)
        with pytest.raises(lock_mod.FolderBusy) as busy:
            topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
        line = str(busy.value)
        assert "\n" not in line and f"is being written by another topoeval (pid {proc.pid} on " in line
        assert "run since 20" in line and f"run {proto} -m oracle" in line
        second = cli("run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out))
        assert second.returncode == 2 and second.stderr.count("\n") == 1 and f"(pid {proc.pid} " in second.stderr
        merge = cli("merge", str(out))
        assert merge.returncode == 2 and f"(pid {proc.pid} " in merge.stderr and "Traceback" not in merge.stderr
        publish = cli("publish", str(out), "--repo", "o/n", "--dry-run", "--out", str(tmp_path / "pub"), "--offline")
        assert publish.returncode == 2 and "cannot publish it: " in publish.stderr and f"(pid {proc.pid} " in publish.stderr
        assert proc.poll() is None  # nothing above disturbed the running run
    finally:
        proc.wait(timeout=120)
    assert proc.returncode == 0
    assert cli("report", str(out)).returncode == 0  # once it ended, the folder is free again
    published = cli("publish", str(out), "--repo", "o/n", "--dry-run", "--out", str(tmp_path / "pub"), "--offline")
    assert published.returncode == 0, published.stderr
    again = topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    assert again.new_episodes == 0 and again.reused_episodes == 60


def test_report_does_not_rewrite_a_folder_another_process_holds(tmp_path, echo_protocol, fixture_suites, cli):
    out = tmp_path / "run"
    topoeval.run_protocol(echo_protocol(n=1), ["oracle"], out, suites_dirs=[fixture_suites])
    before = (out / "report.md").stat().st_mtime_ns
    proc = _holder(out, "run")  # e.g. a resumed run adding a model
    try:
        report = cli("report", str(out))
        assert report.returncode == 2 and f"(pid {proc.pid} " in report.stderr
        assert (out / "report.md").stat().st_mtime_ns == before
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert cli("report", str(out)).returncode == 0


def test_shards_write_side_by_side_but_a_shard_runs_once_and_merge_waits(tmp_path):
    run_dir = tmp_path / "run"
    proc = _holder(run_dir, "run", "shard-1-of-2")
    try:
        with lock_mod.lock_run(run_dir, "run", shard="shard-2-of-2"):  # another shard: beside it
            pass
        with pytest.raises(lock_mod.FolderBusy, match=rf"\(pid {proc.pid} on .*: .*--api-key \*\*\*\)"):
            lock_mod.lock_run(run_dir, "run", shard="shard-1-of-2")  # the same shard twice
        with pytest.raises(lock_mod.FolderBusy, match=rf"pid {proc.pid} "):
            lock_mod.lock_run(run_dir, "merge")  # a merge while a shard writes
        assert "sk-secret" not in (run_dir / "run.shard-1-of-2.lock").read_text()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with lock_mod.lock_run(run_dir, "merge"):  # a killed holder leaves no held lock
        pass


def test_a_whole_run_keeps_shards_out_and_is_reentrant_in_its_own_process(tmp_path):
    run_dir = tmp_path / "run"
    proc = _holder(run_dir, "run")
    try:
        with pytest.raises(lock_mod.FolderBusy, match=rf"pid {proc.pid} "):
            lock_mod.lock_run(run_dir, "run", shard="shard-1-of-2")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with lock_mod.lock_run(run_dir, "run", shard="workers"):  # a --workers parent beside its shards ...
        with lock_mod.lock_run(run_dir, "merge"):  # ... takes the folder whole to merge them
            pass
        with lock_mod.lock_run(run_dir, "run", shard="workers"):
            pass
    assert not lock_mod._HELD


def test_a_folder_that_cannot_be_written_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UserError, match=r"file/run: cannot be written \("):
        lock_mod.lock_run(blocker / "run", "run")


def test_the_recorded_command_hides_keys_and_url_credentials(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["topoeval", "run", "p", "--api-key", "sk-1", "--api-key=sk-2",
                                      "--api-base", "http://user:tok@host/v1?api-key=sk-3"])
    line = lock_mod.command_line()
    assert "sk-" not in line and "tok@" not in line and line.startswith("topoeval run p --api-key *** --api-key=***")


class Rejected(Policy):
    """A model whose preflight is refused (a wrong key): the run ends before it writes anything."""

    name = "rejected"

    async def act(self, messages, tools, sampling, ctx):
        raise AssertionError("never asked")

    async def preflight(self):
        raise UserError("model 'rejected': the key was rejected")


def test_a_run_that_fails_before_writing_leaves_no_folder_and_no_lock(tmp_path, echo_protocol, fixture_suites):
    out = tmp_path / "run"
    with pytest.raises(UserError, match="the key was rejected"):
        topoeval.run_protocol(echo_protocol(n=1), [Rejected()], out, suites_dirs=[fixture_suites])
    assert not out.exists() and not lock_mod._HELD


@pytest.mark.parametrize("param", ["access_token", "x-api-key", "password", "auth", "secret"])
def test_the_recorded_command_hides_every_secret_query_parameter(monkeypatch, tmp_path, param):
    monkeypatch.setattr(sys, "argv", ["topoeval", "run", "p", "-m", f"direct:http://host/v1?{param}=hunter22&x=1",
                                      "--out", str(tmp_path / "run")])
    with lock_mod.lock_run(tmp_path / "run", "run"):
        recorded = (tmp_path / "run" / "run.lock").read_text()
        mode = (tmp_path / "run" / "run.lock").stat().st_mode & 0o777
    assert "hunter22" not in recorded and "x=1" in recorded
    assert mode == 0o600  # the command line is its owner's to read


@pytest.mark.parametrize("command", ["run", "report"])
def test_a_symlinked_run_lock_is_refused_and_its_target_kept(tmp_path, echo_protocol, fixture_suites, cli, command):
    out, proto = tmp_path / "run", echo_protocol(n=1)
    topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    target = tmp_path / "precious.txt"
    target.write_text("not yours\n")
    (out / "run.lock").unlink()
    (out / "run.lock").symlink_to(target)
    args = ["run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out)] \
        if command == "run" else ["report", str(out)]
    proc = cli(*args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {out / 'run.lock'}: is a symlink or not a regular file; topoeval opens only regular files inside "
        "a run folder (remove it, or use another folder)")
    assert target.read_text() == "not yours\n"


def test_a_symlinked_shard_lock_is_refused(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("not yours\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.shard-1-of-2.lock").symlink_to(target)
    with pytest.raises(UserError, match="is a symlink or not a regular file"):
        lock_mod.lock_run(tmp_path / "run", "run", shard="shard-1-of-2")
    assert target.read_text() == "not yours\n" and not lock_mod._HELD


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS])
def test_a_file_system_that_cannot_lock_is_one_line_saying_to_run_on_a_local_disk(tmp_path, echo_protocol,
                                                                                  fixture_suites, cli, monkeypatch,
                                                                                  code):
    import fcntl

    def cannot(fd, op):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fcntl, "flock", cannot)
    out = tmp_path / "run"
    proc = cli("run", str(echo_protocol(n=1)), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f"error: {out}: the file system cannot lock this folder (flock: {os.strerror(code)}; ")
    assert line.endswith("run into a folder on a local disk (e.g. --out /tmp/<name>), then copy it")
    assert not lock_mod._HELD
    lock_mod.check_idle(out, "publish")  # a reader is not stopped by it: no one can hold a lock there
