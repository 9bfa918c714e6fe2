"""The run folder on disk: ``run.json`` and the append-only ``episodes.jsonl``.

Each episode is one JSON line written as soon as it ends, so a run killed at any moment keeps every
finished episode. Reading tolerates any damage (a line cut short by a kill or a full disk, torn UTF-8,
a last line without its newline): such a line is skipped with one warning line naming it, and its
episode simply runs again. A line that is complete but not an episode record
(:mod:`topoeval.runner.records`), or longer than :data:`MAX_LINE_BYTES`, is skipped the same way (and
kept); the key it names runs again. Readers never write; only the run that holds the folder
(:mod:`topoeval.runner.lock`) repairs a damaged file when it opens it for appending
(:mod:`topoeval.runner.episode_file` reads, this module writes).

The episode file is never followed through a symlink: the writer refuses one (and anything that is
not a regular file) in one line, readers skip it with a warning. A full disk while an episode is
written ends the run in one line (:class:`DiskFull`) that says the episodes are kept and how to resume.

An episode that ended in ``error`` (the backend or the world failed, not the model) is not
finished: the next run of the same command runs it again and appends the new record. The latest
line of a key is its record; earlier ones stay in the file as history.
"""

from __future__ import annotations

import errno
import json
import os
import re
from array import array
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

from topoeval.core.errors import UserError
from topoeval.core.files import atomic_file, write_json_atomic
from topoeval.runner.episode_file import (
    MAX_LINE_BYTES,
    NO_RECORD,
    Scan,
    StoreWarning,
    open_for_reading,
    open_regular,
    record_at,
    refuse_irregular,
    scan,
    slot_code,
    walk,
    warn_skipped,
)
from topoeval.runner.plan_index import PlanIndex

EPISODES = "episodes.jsonl"
RUN_JSON = "run.json"
#: the file shard i of n appends to (``--shard i/n``, see :mod:`topoeval.runner.shards`)
SHARD_EPISODES = re.compile(r"^episodes\.shard-(\d+)-of-(\d+)\.jsonl$")
#: what a full disk is (the write's errno): the run ends in one line that says how to resume
_FULL = (errno.ENOSPC, errno.EDQUOT)

__all__ = ["MAX_LINE_BYTES", "NO_RECORD", "Scan", "StoreWarning", "record_at", "scan", "slot_code", "walk"]


class DiskFull(UserError):
    """The disk filled while an episode was written: the episodes written before it are kept (one line)."""


class EpisodeStore:
    """Episodes of one run folder, keyed by episode key: the writer's side. Open it only while holding
    the folder (:func:`topoeval.runner.lock.lock_run`): opening repairs a damaged file (a torn tail is cut
    off, a last line without its newline gets one) so the next record starts on a line of its own.

    The store keeps where each key's latest record starts in the file and whether it finished, not
    the record: a planned key's in an array indexed by its position in ``plan`` (8 bytes an
    episode), any other key's in a dict. :meth:`get` (and the :attr:`records` view) reads a record
    back from the file when asked."""

    def __init__(self, run_dir: Path, name: str = EPISODES, plan: PlanIndex | None = None):
        self.path = run_dir / name
        self.plan = plan
        #: per planned position: the offset of its latest line (finished), -(offset + 2) (an error), or -1
        self._slots = array("q", [NO_RECORD]) * (len(plan) if plan is not None else 0)
        self._extra: dict[str, int] = {}
        self._count = 0
        self._reader: BinaryIO | None = None
        self._fd = -1
        run_dir.mkdir(parents=True, exist_ok=True)
        refuse_irregular(self.path)  # a symlink is never followed: its target is outside the folder's care
        if self.path.exists():
            self._load()
        self._end = self.path.stat().st_size if self.path.exists() else 0

    def _load(self, warn: bool = True) -> None:
        found = Scan()
        for _, offset, key, rec in walk(self.path, found):  # the latest line of a key wins
            if rec is None:
                self._unset(key)  # a foreign line: the key has no record (a resume runs it again)
            else:
                self._set(key, offset, is_finished(rec))
        if warn:
            warn_skipped(found, self.path, stacklevel=4)
        if found.damaged or not found.newline:
            if self._repair(found):  # rewritten: every offset moved
                self._slots = array("q", [NO_RECORD]) * len(self._slots)
                self._extra, self._count = {}, 0
                self._load(warn=False)

    def _set(self, key: str, offset: int, finished: bool) -> None:
        code = slot_code(offset, finished)
        pos = self.plan.position(key) if self.plan is not None else None
        if pos is None:
            self._count += key not in self._extra
            self._extra[key] = code
        else:
            self._count += self._slots[pos] == NO_RECORD
            self._slots[pos] = code

    def _unset(self, key: str) -> None:
        pos = self.plan.position(key) if self.plan is not None else None
        if pos is None:
            self._count -= self._extra.pop(key, NO_RECORD) != NO_RECORD
        else:
            self._count -= self._slots[pos] != NO_RECORD
            self._slots[pos] = NO_RECORD

    def _code(self, key: str) -> int:
        pos = self.plan.position(key) if self.plan is not None else None
        return self._extra.get(key, NO_RECORD) if pos is None else self._slots[pos]

    def _repair(self, found: Scan) -> bool:
        """Make the file end in a newline after its last readable line: cut a torn tail off (in place), or
        rewrite the file without its damaged lines (a scratch file, fsync, an atomic replace). True when
        the file was rewritten."""
        if found.tail_only:
            fd = self._open_regular(os.O_RDWR)
            try:
                os.ftruncate(fd, found.good_end)
                if not found.newline:
                    os.pwrite(fd, b"\n", found.good_end)
                os.fsync(fd)
            finally:
                os.close(fd)
            return False
        with open_for_reading(self.path) as src, atomic_file(self.path) as dst:
            at, last = 0, b"\n"
            for _, offset, size, _ in sorted(found.damaged, key=lambda d: d[1]):  # copy what lies between them
                last = _copy(src, dst, at, offset - at) or last
                at = offset + size
            last = _copy(src, dst, at, None) or last
            if not last.endswith(b"\n"):
                dst.write(b"\n")
        return True

    def _open_regular(self, flags: int) -> int:
        """The episode file opened without following a symlink (one-line UserError for one)."""
        try:
            return open_regular(self.path, flags)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EINVAL):
                refuse_irregular(self.path)
            raise

    def __contains__(self, key: str) -> bool:
        return self._code(key) != NO_RECORD

    def __len__(self) -> int:
        return self._count

    def finished(self, key: str) -> bool:
        """Whether ``key`` has a record that a re-run keeps (any status but ``error``)."""
        return self._code(key) >= 0

    def finished_at(self, pos: int) -> bool:
        """Whether the planned episode at ``pos`` has a record a re-run keeps."""
        return self._slots[pos] >= 0

    def counts(self) -> tuple[int, int]:
        """(finished, errored) records of planned keys."""
        finished = sum(1 for code in self._slots if code >= 0)
        return finished, sum(1 for code in self._slots if code <= -2)

    def errors(self) -> int:
        """Keys whose latest record ended in ``error`` (planned or not)."""
        return self.counts()[1] + sum(1 for code in self._extra.values() if code <= -2)

    def get(self, key: str) -> dict[str, Any] | None:
        """``key``'s latest record, read from the file (None when it has none)."""
        code = self._code(key)
        if code == NO_RECORD:
            return None
        if self._reader is None:
            self._reader = os.fdopen(self._open_regular(os.O_RDONLY), "rb")  # closed by close()
        return record_at(self._reader, code, self.path, key)

    def reader(self) -> BinaryIO:
        """A new reader of the episode file (opened without following a symlink); the caller closes it."""
        return os.fdopen(self._open_regular(os.O_RDONLY), "rb")

    def entries(self) -> Iterator[tuple[str, int]]:
        """(key, where its latest record is) of every key with a record: planned ones in plan order, then
        the others in key order."""
        if self.plan is not None:
            for pos, key in enumerate(self.plan.keys()):
                if self._slots[pos] != NO_RECORD:
                    yield key, self._slots[pos]
        for key in sorted(self._extra):
            yield key, self._extra[key]

    def keys(self) -> Iterator[str]:
        """Every key with a record, in :meth:`entries`' order."""
        return (key for key, _ in self.entries())

    @property
    def records(self) -> StoredRecords:
        """Each key's latest record, read from the file as it is looked up (a read-only mapping)."""
        return StoredRecords(self)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line (on disk when this returns). A record that cannot be written as
        JSON raises ValueError/TypeError before anything is written; a full disk raises OSError."""
        data = record_line(record)
        if self._fd < 0:
            self._fd = self._open_regular(os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        offset = self._end
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            if exc.errno in _FULL:
                raise self._full(exc) from exc
            raise
        self._end += len(data)
        self._set(record["key"], offset, is_finished(record))

    def close(self) -> None:
        """Sync and close the file; the descriptor is closed even when the sync fails (a full disk)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            os.fsync(fd)
        except OSError as exc:
            if exc.errno in _FULL:
                raise self._full(exc) from exc
            raise
        finally:
            os.close(fd)

    def _full(self, exc: OSError) -> DiskFull:
        return DiskFull(f"{self.path}: the disk is full ({exc.strerror or exc}); the episodes written before it "
                        f"are kept ({len(self)} in the file): free some space, then run the same command again "
                        "to resume (finished episodes are not run again)")


class PlannedRecords:
    """A run's records in plan order, then any others in key order (:func:`~topoeval.runner.shards.in_plan_order`'s
    order), read back from its episode file on each pass: what the summary and reports stream over.
    ``owns``: keep only the keys it accepts (a shard's)."""

    #: the records come task by task in each cell (plan order): the summary's fold need not check it
    plan_ordered = True

    def __init__(self, store: EpisodeStore, owns: Callable[[str], bool] | None = None):
        self._store, self._owns = store, owns
        self._len: int | None = None

    def _entries(self) -> Iterator[tuple[str, int]]:
        return ((key, code) for key, code in self._store.entries() if self._owns is None or self._owns(key))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with self._store.reader() as fh:
            for key, code in self._entries():
                yield record_at(fh, code, self._store.path, key)

    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(1 for _ in self._entries())
        return self._len


class StoredRecords(Mapping[str, dict[str, Any]]):
    """A store's records as a read-only mapping; each lookup reads its line from the file."""

    def __init__(self, store: EpisodeStore):
        self._store = store

    def __getitem__(self, key: str) -> dict[str, Any]:
        rec = self._store.get(key)
        if rec is None:
            raise KeyError(key)
        return rec

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._store

    def __iter__(self) -> Iterator[str]:
        return self._store.keys()

    def __len__(self) -> int:
        return len(self._store)


def record_line(record: dict[str, Any]) -> bytes:
    """A record as one JSONL line (UTF-8; a lone surrogate kept as its JSON escape, never an error)."""
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


def is_finished(record: dict[str, Any]) -> bool:
    """An episode a re-run keeps: it ended with any status but ``error`` (an infrastructure failure)."""
    return record.get("status") != "error"


def finished_keys(run_dir: str | Path) -> set[str]:
    """Keys of the run folder's finished episodes (what a re-run skips), in episodes.jsonl and in
    the files of any shards run into the same folder."""
    return {key for path in episode_files(run_dir) for key in finished_in(path)}


def finished_in(path: Path) -> set[str]:
    """Keys whose latest line in one episode file is finished, read a record at a time (damaged lines
    skipped, one warning)."""
    latest: dict[str, bool] = {}
    found = Scan()
    for _, _, key, rec in walk(path, found):
        latest[key] = rec is not None and is_finished(rec)  # a foreign latest line: not finished
    warn_skipped(found, path)
    return {key for key, done in latest.items() if done}


def episode_files(run_dir: str | Path) -> list[Path]:
    """The folder's episodes.jsonl (if any), then its shard files in (n, i) order."""
    run_dir = Path(run_dir)
    shards = sorted(((int(m.group(2)), int(m.group(1))), p) for p in run_dir.glob("episodes.shard-*-of-*.jsonl")
                    if (m := SHARD_EPISODES.match(p.name)))
    main = run_dir / EPISODES
    return ([main] if main.exists() or main.is_symlink() else []) + [p for _, p in shards]


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """The latest complete record of each key in one episode file (damaged lines skipped, one warning)."""
    return {rec["key"]: rec for _, rec in scan(path).records}


def iter_records(path: Path) -> list[dict[str, Any]]:
    """Every readable record of one episode file, history lines included, in file order."""
    return [rec for _, rec in scan(path).records]


def read_episodes(run_dir: str | Path) -> list[dict[str, Any]]:
    """The latest record of each episode of a run folder (damaged lines skipped, one warning)."""
    path = Path(run_dir) / EPISODES
    return list(read_records(path).values()) if path.exists() else []


def _copy(src: BinaryIO, dst: IO[bytes], offset: int, size: int | None) -> bytes:
    """Copy ``size`` bytes (None: to the end) of ``src`` from ``offset`` into ``dst`` in bounded chunks;
    returns the last chunk copied (b"" when none)."""
    src.seek(offset)
    last = b""
    while size is None or size > 0:
        chunk = src.read(1 << 20 if size is None else min(1 << 20, size))
        if not chunk:
            break
        dst.write(chunk)
        last = chunk
        if size is not None:
            size -= len(chunk)
    return last


def read_json(path: Path) -> dict[str, Any]:
    """A run folder's JSON file (run.json, summary.json, plan.json), never read through a symlink."""
    try:
        with open_for_reading(path) as fh:
            return json.loads(fh.read().decode("utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: not found (is this a topoeval run folder?)") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EINVAL):
            raise UserError(f"{path}: is a symlink or not a regular file; topoeval reads only regular files inside "
                            "a run folder") from None
        raise


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic write (:func:`topoeval.core.files.write_json_atomic`): a crash never leaves half a file, and
    shards of one run writing run.json side by side never share a scratch file."""
    write_json_atomic(path, data)
