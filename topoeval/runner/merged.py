"""One record per episode key over several episode files, without holding the records.

A run folder may hold several episode files (``episodes.jsonl`` and the files of shards run into it),
and ``topoeval merge`` reads the files of several folders. :class:`MergedRecords` reads each file
once and keeps, per key, which file its chosen record is in and where its line starts (an index
like :class:`~topoeval.runner.store.EpisodeStore`'s: 8 + 4 bytes a planned episode); the records are
read back from the files when they are iterated, so merging a million episodes never holds a
million records.

The rule (the same as when every record was read into one dict): within a file the latest line of
a key is its record; over the files, in the order given, the first record of a key is kept, a
finished record replaces an errored one, and two finished records of one key must be equal up to
their timing, else a one-line UserError names the key and both files.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from topoeval.core.errors import UserError
from topoeval.runner.episode_file import NO_RECORD, Scan, open_regular, record_at, slot_code, walk, warn_skipped
from topoeval.runner.store import is_finished

#: Fields of an episode record that measure time, not outcome: ignored when duplicates are compared.
TIMING_FIELDS = ("wall_s", "policy_s")
#: episode files kept open at once while reading records back (a merge of thousands of shard files
#: stays under the process's limit on open files)
OPEN_FILES = 32


class Positions(Protocol):
    """Planned keys by position (:class:`~topoeval.runner.plan_index.PlanIndex`, :class:`KeyPositions`)."""

    def __len__(self) -> int: ...

    def position(self, key: str) -> int | None: ...

    def key(self, pos: int) -> str: ...

    def keys(self) -> Iterator[str]: ...


class KeyPositions:
    """Positions of an explicit list of planned keys (a ``plan.json``'s), for :class:`MergedRecords`."""

    def __init__(self, keys: Sequence[str]):
        self._keys = keys
        self._pos = {key: i for i, key in enumerate(keys)}

    def __len__(self) -> int:
        return len(self._keys)

    def position(self, key: str) -> int | None:
        return self._pos.get(key)

    def key(self, pos: int) -> str:
        return self._keys[pos]

    def keys(self) -> Iterator[str]:
        return iter(self._keys)


def outcome(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its timing fields: what two copies of one episode must agree on."""
    return {k: v for k, v in record.items() if k not in TIMING_FIELDS}


class MergedRecords:
    """The chosen record of every key over ``files`` (see the module's rule), read back from the files
    when iterated: planned keys in ``plan`` order, then any others in key order. ``owns``: keep only
    the keys it accepts (a shard's). Damaged lines are skipped with one :class:`StoreWarning` a file."""

    #: the records come task by task in each cell (plan order): the summary's fold need not check it
    plan_ordered = True

    def __init__(self, files: Sequence[Path], plan: Positions | None = None,
                 owns: Callable[[str], bool] | None = None):
        self.files = [Path(f) for f in files]
        self.plan = plan if plan is not None else KeyPositions([])
        self._owns = owns
        size = len(self.plan)
        #: per planned position: the file its record is in (-1: none) and where the line starts
        self._file = array("i", [-1]) * size
        self._slot = array("q", [NO_RECORD]) * size
        self._extra: dict[str, tuple[int, int]] = {}
        #: records folded into another one of the same key in an earlier file
        self.duplicates = 0
        readers: dict[int, BinaryIO] = {}
        try:
            for i, path in enumerate(self.files):
                self._fold_file(i, path, readers)
        finally:
            _close(readers)

    # -- building the index --------------------------------------------------------------------------------

    def _fold_file(self, i: int, path: Path, readers: dict[int, BinaryIO]) -> None:
        found = Scan()
        slots = array("q", [NO_RECORD]) * len(self._slot)
        extra: dict[str, int] = {}
        for _, offset, key, rec in walk(path, found):  # within a file the latest line of a key wins
            code = NO_RECORD if rec is None else slot_code(offset, is_finished(rec))  # a foreign line: no record
            pos = self.plan.position(key)
            if pos is None:
                extra[key] = code
            else:
                slots[pos] = code
        warn_skipped(found, path, stacklevel=5)
        for pos, code in enumerate(slots):
            if code == NO_RECORD:
                continue
            if self._file[pos] < 0:
                self._file[pos], self._slot[pos] = i, code
            elif (chosen := self._choose((self._file[pos], self._slot[pos]), (i, code), readers,
                                         self.plan.key(pos))) is not None:
                self._file[pos], self._slot[pos] = chosen
        for key, code in extra.items():
            if code == NO_RECORD:
                continue
            if key not in self._extra:
                self._extra[key] = (i, code)
            elif (chosen := self._choose(self._extra[key], (i, code), readers, key)) is not None:
                self._extra[key] = chosen

    def _choose(self, old: tuple[int, int], new: tuple[int, int], readers: dict[int, BinaryIO],
                key: str) -> tuple[int, int] | None:
        """The slot ``key`` keeps when ``new`` is found after ``old`` (None: keep ``old``)."""
        self.duplicates += 1
        if old[1] < 0:  # a finished episode (or a later attempt) replaces an errored one
            return new
        if new[1] >= 0:
            a = self._read(*old, readers, key)
            b = self._read(*new, readers, key)
            if outcome(a) != outcome(b):
                raise UserError(f"episode {key} has two different results ({self.files[old[0]]} and "
                                f"{self.files[new[0]]}); remove one of them, then merge again")
        return None

    def _read(self, file: int, code: int, readers: dict[int, BinaryIO], key: str) -> dict[str, Any]:
        """The record at ``code`` in file number ``file``, checked to be ``key``'s (``readers``: the
        files open so far, by number; at most :data:`OPEN_FILES`, the longest open closed first)."""
        if file not in readers:
            if len(readers) >= OPEN_FILES:
                readers.pop(next(iter(readers))).close()
            readers[file] = os.fdopen(open_regular(self.files[file]), "rb")  # closed by _close, by readers' maker
        return record_at(readers[file], code, self.files[file], key)

    # -- reading ---------------------------------------------------------------------------------------------

    def _keeps(self, key: str) -> bool:
        return self._owns is None or self._owns(key)

    def _entries(self) -> Iterator[tuple[str, int, int]]:
        """(key, file, slot) of every kept key, in iteration order."""
        for pos, key in enumerate(self.plan.keys()):
            if self._file[pos] >= 0 and self._keeps(key):
                yield key, self._file[pos], self._slot[pos]
        for key in sorted(self._extra):
            if self._keeps(key):
                yield key, *self._extra[key]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        readers: dict[int, BinaryIO] = {}
        try:
            for key, file, code in self._entries():
                yield self._read(file, code, readers, key)  # a file rewritten since it was indexed: an error
        finally:
            _close(readers)

    def __len__(self) -> int:
        return sum(1 for _ in self._entries())

    def keys(self) -> Iterator[str]:
        """Every kept key, in iteration order."""
        return (key for key, _, _ in self._entries())

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or not self._keeps(key):
            return False
        pos = self.plan.position(key)
        return key in self._extra if pos is None else self._file[pos] >= 0

    @property
    def left_out(self) -> int:
        """Keys with a record that ``owns`` does not accept (not planned ones only: those are a shard's)."""
        return 0 if self._owns is None else sum(1 for key in self._extra if not self._owns(key))

    def missing(self) -> list[str]:
        """Planned keys (that ``owns`` accepts) no file has a record for, in plan order."""
        return [key for pos, key in enumerate(self.plan.keys())
                if self._file[pos] < 0 and self._keeps(key)]

    def errors(self) -> int:
        """Kept keys whose chosen record ended in ``error``."""
        return sum(1 for _, _, code in self._entries() if code < 0)


def _close(readers: dict[int, BinaryIO]) -> None:
    for fh in readers.values():
        fh.close()
