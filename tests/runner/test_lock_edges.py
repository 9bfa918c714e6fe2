"""The run lock's bookkeeping at its edges, in this process where it can be: a shard's shared hold upgraded
for a merge and given back, each folder its own lock, what the lock file records and how much of it is
read, the one lines of a busy, unwritable or unlockable folder, and the clean-up of an unused folder
(mutation testing found these unchecked: docs/development.md)."""

import errno
import fcntl
import json
import os
import subprocess
import sys
from contextlib import contextmanager

import pytest

from topoeval.core.errors import UserError
from topoeval.runner import lock as lock_module
from topoeval.runner.lock import (
    LOCK,
    CannotLock,
    FolderBusy,
    _busy,
    _is_held,
    _open_nofollow,
    _owner,
    check_idle,
    command_line,
    discard_unused,
    lock_run,
)


def can_share(path) -> bool:
    """Whether a new descriptor of ``path`` can take a shared lock (no exclusive hold on it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@contextmanager
def held_elsewhere(path, mode: str, owner: dict):
    """Another process holding ``path`` (shared or exclusive) with ``owner`` recorded in it."""
    op = "LOCK_SH" if mode == "shared" else "LOCK_EX"
    code = ("import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
            f"fcntl.flock(fd, fcntl.{op})\n"
            "os.ftruncate(fd, 0); os.pwrite(fd, sys.argv[2].encode(), 0)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path), json.dumps(owner)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


OWNER = {"pid": 4242, "host": "box", "doing": "merge", "since": "2026-12-06T00:10:00+00:00",
         "command": "topoeval merge a b"}


def test_a_shard_s_shared_hold_is_upgraded_for_a_merge_and_given_back(tmp_path):
    run_dir = tmp_path / "run"
    shard = lock_run(run_dir, "run", shard="shard-1-of-2")
    shard_lock = run_dir / "run.shard-1-of-2.lock"
    assert can_share(run_dir / LOCK) and json.loads(shard_lock.read_text())["doing"] == "run"
    merge = lock_run(run_dir, "merge")  # the same process merges its own shards: exclusive now
    assert not can_share(run_dir / LOCK) and json.loads((run_dir / LOCK).read_text())["doing"] == "merge"
    merge.release()
    assert can_share(run_dir / LOCK) and (run_dir / LOCK).read_text() == ""  # shared again, owner cleared
    again = lock_run(run_dir, "run", shard="shard-2-of-2")  # another shard in this process: shared, counted
    assert can_share(run_dir / LOCK)
    again.release()
    shard.release()
    assert not _is_held(run_dir / LOCK) and not _is_held(shard_lock) and shard_lock.read_text() == ""
    check_idle(run_dir, "publish")


def test_each_folder_has_its_own_lock(tmp_path):
    with lock_run(tmp_path / "a", "run"), lock_run(tmp_path / "b", "run"):
        assert _is_held(tmp_path / "a" / LOCK) and _is_held(tmp_path / "b" / LOCK)
        check_idle(tmp_path / "a", "publish")  # held by this process: passes
    assert not _is_held(tmp_path / "a" / LOCK) and not _is_held(tmp_path / "b" / LOCK)


def test_the_lock_file_records_who_holds_it(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/usr/bin/topoeval", "run", "p"])
    with lock_run(tmp_path / "a" / "b", "report"):  # parents made too
        owner = json.loads((tmp_path / "a" / "b" / LOCK).read_text())
    assert set(owner) == {"pid", "host", "doing", "command", "since"}
    assert owner["pid"] == os.getpid() and owner["doing"] == "report" and owner["command"] == "topoeval run p"
    assert owner["since"].endswith("+00:00") and len(owner["since"]) == 25
    assert os.stat(tmp_path / "a" / "b" / LOCK).st_mode & 0o777 == 0o600


def test_the_command_line_is_the_program_s_name_and_at_most_300_characters(monkeypatch):
    monkeypatch.setattr(sys, "argv", [])
    assert command_line() == "python"
    monkeypatch.setattr(sys, "argv", ["/x/topoeval", "a" * 288])  # 8 + 1 + 288 = 297
    assert command_line() == "topoeval " + "a" * 288
    monkeypatch.setattr(sys, "argv", ["/x/topoeval", "a" * 291])  # exactly 300
    assert command_line() == "topoeval " + "a" * 291
    monkeypatch.setattr(sys, "argv", ["/x/topoeval", "a" * 292])
    assert command_line() == "topoeval " + "a" * 288 + "..." and len(command_line()) == 300


def test_a_lock_file_s_owner_is_a_json_object_of_at_most_64_kib(tmp_path):
    path = tmp_path / LOCK
    path.write_bytes(b'{"host": "b\xffx"}')  # a byte that is not UTF-8 is replaced, not fatal
    assert _owner(path) == {"host": "b\ufffdx"}
    for text in ("", "[1]", "{", "null"):
        path.write_text(text)
        assert _owner(path) is None
    path.write_text(json.dumps({"pad": "x" * (64 * 1024 - 20)}))  # just under 64 KiB
    assert _owner(path) is not None
    path.write_text(json.dumps({"pad": "x" * (64 * 1024)}))  # past it: not read whole, not an owner
    assert _owner(path) is None
    assert _owner(tmp_path / "missing") is None


def test_a_busy_folder_names_its_holder_or_says_another_process(tmp_path):
    (tmp_path / LOCK).write_text(json.dumps(OWNER))
    assert str(_busy(tmp_path, None)) == (
        f"{tmp_path}: is being written by another topoeval (pid 4242 on box, merge since 2026-12-06T00:10:00+00:00: "
        "topoeval merge a b); wait for it to end, or use another folder")
    (tmp_path / LOCK).write_text(json.dumps({k: v for k, v in OWNER.items() if k != "doing"}))
    assert "(pid 4242 on box, run since" in str(_busy(tmp_path, None))
    (tmp_path / LOCK).write_text("")
    assert str(_busy(tmp_path, None)) == (f"{tmp_path}: is being written by another process; wait for it to end, or "
                                          "use another folder")


def test_an_upgrade_refused_by_another_process_s_shard_names_it(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shard = lock_run(run_dir, "run", shard="shard-1-of-2")
    try:
        with held_elsewhere(run_dir / "run.shard-2-of-2.lock", "exclusive", OWNER), \
                held_elsewhere(run_dir / LOCK, "shared", {}):
            with pytest.raises(FolderBusy, match=f"^{run_dir}: is being written by another topoeval \\(pid "):
                lock_run(run_dir, "merge")  # (the first shard lock held names the holder: here, this process's)
    finally:
        shard.release()


def test_a_shard_already_running_elsewhere_is_named_and_nothing_is_kept_open(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with held_elsewhere(run_dir / "run.shard-1-of-2.lock", "exclusive", OWNER):
        before = len(os.listdir("/proc/self/fd"))
        with pytest.raises(FolderBusy, match=f"^{run_dir}: is being written by another topoeval \\(pid 4242 on box, "
                                             "merge since"):
            lock_run(run_dir, "run", shard="shard-1-of-2")
        assert len(os.listdir("/proc/self/fd")) == before
    with lock_run(run_dir, "run"):  # the run's own lock was given back
        pass


def test_a_file_system_that_cannot_lock_is_one_line_naming_the_folder(tmp_path, monkeypatch):
    real = fcntl.flock
    calls = []

    def cannot(fd, op, fail_on=(1,)):
        calls.append(op)
        if len(calls) in fail_on:
            raise OSError(errno.ENOLCK, "No locks available")
        return real(fd, op)

    monkeypatch.setattr(lock_module.fcntl, "flock", cannot)
    with pytest.raises(CannotLock, match=f"^{tmp_path / 'a'}: the file system cannot lock this folder \\(flock: No "
                                         "locks available; NFS without lockd or a FUSE mount\\?\\)"):
        lock_run(tmp_path / "a", "run")
    calls.clear()
    monkeypatch.setattr(lock_module.fcntl, "flock", lambda fd, op: cannot(fd, op, (2,)))
    with pytest.raises(CannotLock, match=f"^{tmp_path / 'b'}: the file system"):
        lock_run(tmp_path / "b", "run", shard="shard-1-of-2")  # the shard's own lock
    calls.clear()
    shard = None
    monkeypatch.setattr(lock_module.fcntl, "flock", real)
    shard = lock_run(tmp_path / "c", "run", shard="shard-1-of-2")
    monkeypatch.setattr(lock_module.fcntl, "flock", lambda fd, op: cannot(fd, op, (1,)))
    try:
        with pytest.raises(CannotLock, match=f"^{tmp_path / 'c'}: the file system"):
            lock_run(tmp_path / "c", "merge")  # the upgrade
    finally:
        monkeypatch.setattr(lock_module.fcntl, "flock", real)
        shard.release()


def test_a_folder_that_cannot_be_made_or_a_lock_file_that_is_not_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match=rf"^{tmp_path / 'file' / 'run'}: cannot be written \(Not a directory\)$"):
        lock_run(tmp_path / "file" / "run", "run")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / LOCK).symlink_to(tmp_path / "file")
    with pytest.raises(UserError, match=rf"^{tmp_path / 'r' / LOCK}: is a symlink or not a regular file; topoeval "
                                        r"opens only regular files inside a run folder \(remove it, or use another "
                                        r"folder\)$"):
        lock_run(tmp_path / "r", "run")


def test_a_fifo_is_not_opened_as_a_lock_file_nor_waited_on(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as info:
        _open_nofollow(fifo, os.O_RDONLY)
    assert (info.value.errno, info.value.strerror) == (errno.EINVAL, "not a regular file")
    assert not _is_held(fifo) and not _is_held(tmp_path / "missing")


def test_an_unused_folder_is_removed_and_anything_else_kept(tmp_path):
    unused, kept, empty, held = (tmp_path / n for n in ("unused", "kept", "empty", "held"))
    for d in (unused, kept, empty, held):
        d.mkdir()
    (unused / LOCK).write_text("")
    (kept / LOCK).write_text("")
    (kept / "episodes.jsonl").write_text("")
    discard_unused(unused)
    discard_unused(kept)
    discard_unused(empty)
    discard_unused(tmp_path / "missing")
    assert not unused.exists() and not empty.exists() and (kept / LOCK).exists()
    with lock_run(held, "run"):
        discard_unused(held)
        assert (held / LOCK).exists()


def test_nested_holds_in_one_process_keep_the_outer_one_exclusive_until_it_is_released(tmp_path):
    run_dir = tmp_path / "run"
    outer = lock_run(run_dir, "run")
    inner = lock_run(run_dir, "report")
    inner.release()
    inner.release()  # a second release is nothing
    assert not can_share(run_dir / LOCK) and json.loads((run_dir / LOCK).read_text())["doing"] == "run"
    outer.release()
    assert can_share(run_dir / LOCK) and (run_dir / LOCK).read_text() == ""  # the owner cleared


def test_a_merge_upgrade_nested_in_another_keeps_the_folder_exclusive_and_a_second_merge_upgrades_again(tmp_path):
    run_dir = tmp_path / "run"
    shard = lock_run(run_dir, "run", shard="shard-1-of-2")
    first = lock_run(run_dir, "merge")
    nested = lock_run(run_dir, "report")
    nested.release()
    assert not can_share(run_dir / LOCK)  # the merge still holds it alone
    first.release()
    assert can_share(run_dir / LOCK)
    second = lock_run(run_dir, "merge")
    assert not can_share(run_dir / LOCK)
    second.release()
    shard.release()


def test_the_shard_asked_for_names_its_own_holder_not_another_shard_s(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    other = {**OWNER, "pid": 1111, "command": "topoeval run p --shard 1/2"}
    mine = {**OWNER, "pid": 2222, "command": "topoeval run p --shard 2/2"}
    with held_elsewhere(run_dir / "run.shard-1-of-2.lock", "exclusive", other), \
            held_elsewhere(run_dir / "run.shard-2-of-2.lock", "exclusive", mine), \
            held_elsewhere(run_dir / LOCK, "shared", {}):
        with pytest.raises(FolderBusy, match=r"\(pid 2222 on box"):
            lock_run(run_dir, "run", shard="shard-2-of-2")


def test_a_lock_file_that_is_a_folder_is_one_line(tmp_path):
    (tmp_path / LOCK).mkdir()
    with pytest.raises(UserError, match=rf"^{tmp_path}: cannot be written \(Is a directory\)$"):
        lock_run(tmp_path, "run")


def test_a_lock_file_on_a_file_system_that_cannot_lock_is_held_by_no_one(tmp_path, monkeypatch):
    (tmp_path / LOCK).write_text("")

    def cannot(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(lock_module.fcntl, "flock", cannot)
    assert not _is_held(tmp_path / LOCK)
