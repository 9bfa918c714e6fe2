"""The run folder on disk: ``run.json`` and the append-only ``episodes.jsonl``.

Each episode is one JSON line written as soon as it ends, so a run killed at any moment keeps every
finished episode. Reading tolerates any damage (a line cut short by a kill or a full disk, torn UTF-8,
a last line without its newline): such a line is skipped with one warning line naming it, and its
episode simply runs again. Readers never write; only the run that holds the folder
(:mod:`topoeval.runner.lock`) repairs a damaged file when it opens it for appending.

An episode that ended in ``error`` (the backend or the world failed, not the model) is not
finished: the next run of the same command runs it again and appends the new record. The latest
line of a key is its record; earlier ones stay in the file as history.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from topoeval.core.errors import UserError
from topoeval.core.files import atomic_file, write_json_atomic
from topoeval.runner.plan_index import PlanIndex

EPISODES = "episodes.jsonl"
RUN_JSON = "run.json"
#: the file shard i of n appends to (``--shard i/n``, see :mod:`topoeval.runner.shards`)
SHARD_EPISODES = re.compile(r"^episodes\.shard-(\d+)-of-(\d+)\.jsonl$")


class StoreWarning(UserWarning):
    """An episode file had damaged lines (a torn tail after a kill or a full disk): they were skipped."""


@dataclass
class Scan:
    """What reading one episode file found."""

    #: (line number, record) of every readable line, in file order
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: (line number, byte offset, length in bytes, why) of every line that was skipped
    damaged: list[tuple[int, int, int, str]] = field(default_factory=list)
    #: byte offset just past the last readable line, and whether that line ends in a newline
    good_end: int = 0
    newline: bool = True

    @property
    def tail_only(self) -> bool:
        """Whether every damaged line comes after the last readable one (a torn tail, the usual case)."""
        return all(offset >= self.good_end for _, offset, _, _ in self.damaged)

    def report(self, path: Path) -> str:
        """One line saying what was skipped."""
        parts = [f"line {n} ({size} bytes: {why})" for n, _, size, why in self.damaged[:3]]
        more = f" and {len(self.damaged) - 3} more" if len(self.damaged) > 3 else ""
        return f"{path}: skipped {len(self.damaged)} damaged line(s): {', '.join(parts)}{more}"


def _parse(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """One line's record, or why it is skipped. orjson first (several times faster); what it refuses
    (NaN, huge integers, deep nesting) goes to the standard library, which decides."""
    try:
        rec = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            rec = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return None, "not UTF-8 (torn)"
        except (ValueError, RecursionError):
            return None, "not complete JSON" if not raw.endswith(b"\n") else "not JSON"
    if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
        return None, "not an episode record"
    return rec, None


def walk(path: Path, out: Scan) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line number, byte offset, record) of every readable line of ``path``, in file order; what was
    skipped, and where the readable part ends, go into ``out`` as the walk goes."""
    offset = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            size = len(raw)
            rec, why = _parse(raw)
            if rec is not None:
                out.good_end, out.newline = offset + size, raw.endswith(b"\n")
                yield lineno, offset, rec
            elif raw.strip():
                out.damaged.append((lineno, offset, size, why or ""))
            offset += size


def scan(path: Path, warn: bool = True) -> Scan:
    """Read an episode file line by line, whatever bytes it holds: a line that is not UTF-8, not JSON, not
    a record with a key, or cut short is skipped (one :class:`StoreWarning` line names them). Never writes."""
    out = Scan()
    out.records = [(lineno, rec) for lineno, _, rec in walk(path, out)]
    if out.damaged and warn:
        warnings.warn(out.report(path), StoreWarning, stacklevel=3)
    return out


#: an index slot: no record for the key
NO_RECORD = -1


def slot_code(offset: int, finished: bool) -> int:
    """An index slot for a line starting at ``offset``: the offset (finished), or -(offset + 2) (an error)."""
    return offset if finished else -offset - 2


def record_at(fh: BinaryIO, code: int, path: Path, key: str) -> dict[str, Any]:
    """The record whose line starts where ``code`` (an index slot of :class:`EpisodeStore`) says; ``key``:
    the key it was indexed under, checked (a line of another key means the file was rewritten since)."""
    fh.seek(code if code >= 0 else -code - 2)
    rec, why = _parse(fh.readline())
    if rec is not None and rec["key"] != key:
        rec, why = None, f"another key's line where {key}'s was"
    if rec is None:
        raise UserError(f"{path}: changed while it was read ({why}); is another process writing it?")
    return rec


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
        if self.path.exists():
            self._load()
        self._end = self.path.stat().st_size if self.path.exists() else 0

    def _load(self, warn: bool = True) -> None:
        found = Scan()
        for _, offset, rec in walk(self.path, found):
            self._set(rec["key"], offset, is_finished(rec))  # the latest line of a key wins
        if found.damaged and warn:
            warnings.warn(found.report(self.path), StoreWarning, stacklevel=3)
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

    def _code(self, key: str) -> int:
        pos = self.plan.position(key) if self.plan is not None else None
        return self._extra.get(key, NO_RECORD) if pos is None else self._slots[pos]

    def _repair(self, found: Scan) -> bool:
        """Make the file end in a newline after its last readable line: cut a torn tail off (in place), or
        rewrite the file without its damaged lines (a scratch file, fsync, an atomic replace). True when
        the file was rewritten."""
        if found.tail_only:
            with open(self.path, "r+b") as fh:
                fh.truncate(found.good_end)
                if not found.newline:
                    fh.seek(found.good_end)
                    fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            return False
        bad = {n for n, _, _, _ in found.damaged}
        with open(self.path, "rb") as src, atomic_file(self.path) as dst:
            for lineno, raw in enumerate(src, 1):
                if lineno not in bad:
                    dst.write(raw if raw.endswith(b"\n") else raw + b"\n")
        return True

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
            self._reader = open(self.path, "rb")  # noqa: SIM115 (kept open for the store's reads; close() closes it)
        return record_at(self._reader, code, self.path, key)

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
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        offset = self._end
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
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
        finally:
            os.close(fd)


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
        with open(self._store.path, "rb") as fh:
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
    for _, _, rec in walk(path, found):
        latest[rec["key"]] = is_finished(rec)
    if found.damaged:
        warnings.warn(found.report(path), StoreWarning, stacklevel=2)
    return {key for key, done in latest.items() if done}


def episode_files(run_dir: str | Path) -> list[Path]:
    """The folder's episodes.jsonl (if any), then its shard files in (n, i) order."""
    run_dir = Path(run_dir)
    shards = sorted(((int(m.group(2)), int(m.group(1))), p) for p in run_dir.glob("episodes.shard-*-of-*.jsonl")
                    if (m := SHARD_EPISODES.match(p.name)))
    return ([run_dir / EPISODES] if (run_dir / EPISODES).exists() else []) + [p for _, p in shards]


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


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: not found (is this a topoeval run folder?)") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {exc.msg}") from None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic write (:func:`topoeval.core.files.write_json_atomic`): a crash never leaves half a file, and
    shards of one run writing run.json side by side never share a scratch file."""
    write_json_atomic(path, data)
