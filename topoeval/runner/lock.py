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

import fcntl
import json
import os
import re
import socket
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from topoeval.core.errors import UserError

LOCK = "run.lock"
_SHARD_LOCK = "run.{label}.lock"


class FolderBusy(UserError):
    """The run folder is being written by another process (the message names it)."""


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
                fcntl.flock(held.fd, fcntl.LOCK_SH)
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
                    fcntl.flock(held.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise _busy(run_dir, None) from None
                held.exclusive = True
                _write_owner(held.fd, doing)
            held.count += 1
            return RunLock(key, upgraded=upgrade)
        fd = _open(run_dir / LOCK)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shard else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _busy(run_dir, None) from None
        own = None
        if shard:
            own = _open(run_dir / _SHARD_LOCK.format(label=shard))
            try:
                fcntl.flock(own, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(own)
                os.close(fd)
                raise _busy(run_dir, run_dir / _SHARD_LOCK.format(label=shard)) from None
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


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise UserError(f"{path.parent}: cannot be written ({exc.strerror or exc})") from None


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
        data = json.loads(path.read_text(encoding="utf-8", errors="replace") or "null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _is_held(path: Path) -> bool:
    """Whether some process holds ``path`` (a lock file) now."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
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


_SECRET_FLAG = re.compile(r"^(--api-key|--token|--hf-token)(=.*)?$")
_URL_CREDENTIALS = re.compile(r"://[^/@\s]+@")
_QUERY_KEY = re.compile(r"([?&](?:api[-_]?key|key|token)=)[^&\s]+", re.IGNORECASE)


def command_line() -> str:
    """This process's command line as the lock records it: keys and URL credentials masked, at most 300
    characters."""
    words, hide = [], False
    for word in [Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]]:
        if hide:
            words.append("***")
            hide = False
            continue
        m = _SECRET_FLAG.match(word)
        if m:
            words.append(f"{m.group(1)}=***" if m.group(2) else word)
            hide = not m.group(2)
            continue
        words.append(_QUERY_KEY.sub(r"\1***", _URL_CREDENTIALS.sub("://***@", word)))
    text = " ".join(words)
    return text if len(text) <= 300 else text[:297] + "..."
