"""Who owns a run folder: an advisory lock held while a process writes it.

A whole run, a merge, ``topoeval report`` and ``topoeval publish`` hold the folder's ``run.lock``
exclusively; a shard (``--shard i/n``, a ``--workers`` process) holds it shared, together with its own
``run.shard-i-of-n.lock`` exclusively, so the shards of one run write side by side while a second whole
run, a merge or a second copy of the same shard is refused. The lock file the holder owns alone
records its pid, host, command and start time; a refused process names them in one line::

    results/x: is being written by another topoeval (pid 4242 on box, since 2026-12-06T00:10:00+00:00:
    topoeval run wiki_to_travel -m oracle --out results/x); wait for it to end, or use another folder

The locks are ``flock`` locks: the system drops them when their process ends, however it ends (a kill
leaves a lock file, never a held lock). Readers (``report``'s inputs, ``compare``, ``export
--from-run``, :func:`topoeval.runner.store.read_episodes`) take no lock: they never write. Within one
process the lock is re-entrant (a run that merges its own shards upgrades its shared hold).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.core.secrets import mask_command

LOCK = "run.lock"
_SHARD_LOCK = "run.{label}.lock"
#: what ``flock`` fails with on a file system that cannot lock (NFS without lockd, some FUSE mounts)
_CANNOT_LOCK = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)


class FolderBusy(UserError):
    """The run folder is being written by another process (the message names it)."""


class CannotLock(UserError):
    """The folder's file system does not support ``flock`` (NFS without lockd, some FUSE mounts)."""


def _flock(fd: int, op: int, run_dir: Path) -> None:
    """``flock(fd, op)``; a file system that cannot lock is one line (:class:`CannotLock`); BlockingIOError
    (held by another process) passes through."""
    try:
        fcntl.flock(fd, op)
    except BlockingIOError:
        raise
    except OSError as exc:
        if exc.errno in _CANNOT_LOCK:
            raise CannotLock(f"{run_dir}: the file system cannot lock this folder (flock: {exc.strerror or exc}; "
                             "NFS without lockd or a FUSE mount?), so two runs could write it at once: run into "
                             "a folder on a local disk (e.g. --out /tmp/<name>), then copy it") from None
        raise


@dataclass
class _Held:
    fd: int
    exclusive: bool
    count: int = 1
    #: the owner's own lock file (a shard's), held exclusively
    own_fd: int | None = None


_HELD: dict[str, _Held] = {}
_GUARD = threading.Lock()


class RunLock:
    """A hold on a run folder (see :func:`lock_run`); release it once, or use it as a context manager."""

    def __init__(self, key: str, upgraded: bool = False):
        self._key, self._upgraded, self._released = key, upgraded, False

    def release(self) -> None:
        with _GUARD:
            if self._released:
                return
            self._released = True
            held = _HELD[self._key]
            if self._upgraded:  # back to the shared hold this process had before
                held.exclusive = False
                _clear(held.fd)
                fcntl.flock(held.fd, fcntl.LOCK_SH)  # the file system could lock it before: it can now
            held.count -= 1
            if held.count:
                return
            del _HELD[self._key]
            if held.exclusive:
                _clear(held.fd)
            if held.own_fd is not None:
                _clear(held.own_fd)
                os.close(held.own_fd)
            os.close(held.fd)  # closing the last descriptor drops the flock

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_run(run_dir: str | Path, doing: str, shard: str | None = None) -> RunLock:
    """Hold ``run_dir`` (created if missing) while ``doing`` (``run``, ``merge``, ``report``, ...) writes
    it: exclusively, or as shard ``shard`` (a label like ``shard-2-of-4``) beside the run's other shards.
    Raises :class:`FolderBusy` naming the process that holds it, or a one-line UserError when the folder
    cannot be written."""
    run_dir = Path(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        key = str(run_dir.resolve())
    except OSError as exc:
        raise UserError(f"{run_dir}: cannot be written ({exc.strerror or exc})") from None
    with _GUARD:
        held = _HELD.get(key)
        if held is not None:
            upgrade = shard is None and not held.exclusive
            if upgrade:
                try:
                    _flock(held.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, run_dir)
                except BlockingIOError:
                    raise _busy(run_dir, None) from None
                held.exclusive = True
                _write_owner(held.fd, doing)
            held.count += 1
            return RunLock(key, upgraded=upgrade)
        fd = _open(run_dir / LOCK)
        try:
            _flock(fd, (fcntl.LOCK_SH if shard else fcntl.LOCK_EX) | fcntl.LOCK_NB, run_dir)
        except BlockingIOError:
            os.close(fd)
            raise _busy(run_dir, None) from None
        except BaseException:
            os.close(fd)
            raise
        own = None
        if shard:
            try:
                own = _open(run_dir / _SHARD_LOCK.format(label=shard))
            except BaseException:
                os.close(fd)
                raise
            try:
                _flock(own, fcntl.LOCK_EX | fcntl.LOCK_NB, run_dir)
            except BlockingIOError:
                os.close(own)
                os.close(fd)
                raise _busy(run_dir, run_dir / _SHARD_LOCK.format(label=shard)) from None
            except BaseException:
                os.close(own)
                os.close(fd)
                raise
            _write_owner(own, doing)
        else:
            _write_owner(fd, doing)
        _HELD[key] = _Held(fd=fd, exclusive=not shard, own_fd=own)
        return RunLock(key)


def check_idle(run_dir: str | Path, doing: str) -> None:
    """Refuse (:class:`FolderBusy`) to ``doing`` (e.g. publish) a folder another process is writing now;
    takes no lock and writes nothing (a folder without a lock file, or held by this process, passes)."""
    run_dir = Path(run_dir)
    path = run_dir / LOCK
    if not path.exists() or str(run_dir.resolve()) in _HELD:
        return
    if _is_held(path):
        busy = _busy(run_dir, None)
        raise FolderBusy(f"cannot {doing} it: {busy}")


def discard_unused(run_dir: str | Path) -> None:
    """Remove ``run_dir`` if it holds nothing but a lock file nobody holds (what a refused merge or run into a
    new folder leaves); anything else is left as it is."""
    run_dir = Path(run_dir)
    try:
        names = [p.name for p in run_dir.iterdir()]
        if not set(names) <= {LOCK} or (names and _is_held(run_dir / LOCK)):
            return
        for name in names:
            (run_dir / name).unlink()
        run_dir.rmdir()
    except OSError:
        pass


def _open_nofollow(path: Path, flags: int) -> int:
    """``path`` opened without following a symlink and checked to be a regular file (OSError ELOOP for a
    symlink, EINVAL for anything else that is not a regular file)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open(path: Path) -> int:
    """A lock file opened for writing its owner: never through a symlink (whose target it would empty),
    readable by its owner only (mode 0600: it records the command line)."""
    try:
        fd = _open_nofollow(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EINVAL):
            raise UserError(f"{path}: is a symlink or not a regular file; topoeval opens only regular files inside "
                            "a run folder (remove it, or use another folder)") from None
        raise UserError(f"{path.parent}: cannot be written ({exc.strerror or exc})") from None
    try:
        os.fchmod(fd, 0o600)  # a lock file an older topoeval made 0644
    except OSError:
        pass
    return fd


def _write_owner(fd: int, doing: str) -> None:
    """Record this process as the holder (best effort: a full disk does not stop the lock)."""
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "doing": doing, "command": command_line(),
             "since": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(owner) + "\n").encode(), 0)
    except OSError:
        pass


def _clear(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass


def _owner(path: Path) -> dict | None:
    try:
        fd = _open_nofollow(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = json.loads(fh.read(64 * 1024).decode("utf-8", errors="replace") or "null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _is_held(path: Path) -> bool:
    """Whether some process holds ``path`` (a lock file) now. A symlink is never followed (it is no lock of
    topoeval's), and a file system that cannot lock holds nothing (no one could have locked it)."""
    try:
        fd = _open_nofollow(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _busy(run_dir: Path, own: Path | None) -> FolderBusy:
    """The one line naming who writes ``run_dir``: the holder of the shard lock ``own`` asked for, else a
    shard holding the folder, else its exclusive holder."""
    if own is not None:
        candidates = [own]
    else:
        candidates = [p for p in sorted(run_dir.glob("run.*.lock")) if _is_held(p)] + [run_dir / LOCK]
    owner = next((o for p in candidates if (o := _owner(p))), None)
    if owner is None:
        who = "another process"
    else:
        who = (f"another topoeval (pid {owner.get('pid')} on {owner.get('host')}, {owner.get('doing', 'run')} since "
               f"{owner.get('since')}: {owner.get('command')})")
    return FolderBusy(f"{run_dir}: is being written by {who}; wait for it to end, or use another folder")


def command_line() -> str:
    """This process's command line as the lock records it, through the project's one command-line masker
    (:func:`topoeval.core.secrets.mask_command`: key flags, credential-named values, URL credentials and
    secret query parameters hidden); at most 300 characters."""
    words = mask_command([Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]])
    text = " ".join(words)
    return text if len(text) <= 300 else text[:297] + "..."
