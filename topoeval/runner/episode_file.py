"""Reading one episode file line by line, whatever it holds: the readers' side of :mod:`topoeval.runner.store`.

Every line is one of three things:

- a **record**: complete JSON that :func:`topoeval.runner.records.record_problem` accepts;
- **damaged**: bytes that are not complete JSON (a line cut short by a kill or a full disk, torn
  UTF-8). The writer repairs these (:class:`~topoeval.runner.store.EpisodeStore`);
- **foreign**: a complete line that is not an episode record readers can use (another layout, a
  hand edit, ``"scores": null``, a key without ``|``), or a line over :data:`MAX_LINE_BYTES`. It is
  kept in the file but never used: the key it names has no record in that file from then on (the
  latest line of a key decides), so a resume runs that episode again.

Skipped lines of both kinds are counted in one :class:`StoreWarning` line per file. A line is read in
chunks of at most :data:`MAX_LINE_BYTES` (a 300 MB line never becomes one string), and the file is
opened without following a symlink: an episode file that is a symlink (or not a regular file) is not
read, with a warning.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from topoeval.core.errors import UserError
from topoeval.runner.records import record_problem

#: a line longer than this many bytes is skipped (a foreign line, counted in the warning): no episode
#: record comes near it, and reading one must not take a reader's memory with it
MAX_LINE_BYTES = 64 * 1024 * 1024
#: how much of an over-long line is read at a time while it is skipped
_CHUNK = 1024 * 1024
#: an index slot: no record for the key
NO_RECORD = -1


class StoreWarning(UserWarning):
    """An episode file had lines that were skipped (a torn tail, a foreign record, a symlink): one line says so."""


@dataclass
class Scan:
    """What reading one episode file found."""

    #: (line number, record) of every readable line, in file order
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: (line number, byte offset, length in bytes, why) of every line that is not complete JSON (the writer
    #: repairs these)
    damaged: list[tuple[int, int, int, str]] = field(default_factory=list)
    #: (line number, byte offset, length in bytes, why) of every complete line that is not an episode record
    #: (kept in the file, never used)
    foreign: list[tuple[int, int, int, str]] = field(default_factory=list)
    #: byte offset just past the last complete line (a record or a foreign one), and whether it ends in a newline
    good_end: int = 0
    newline: bool = True

    @property
    def tail_only(self) -> bool:
        """Whether every damaged line comes after the last complete one (a torn tail, the usual case)."""
        return all(offset >= self.good_end for _, offset, _, _ in self.damaged)

    @property
    def skipped(self) -> int:
        return len(self.damaged) + len(self.foreign)

    def report(self, path: Path) -> str:
        """One line saying what was skipped."""
        said = []
        for what, lines in (("damaged line(s)", self.damaged), ("line(s) that are not episode records", self.foreign)):
            if lines:
                parts = [f"line {n} ({size} bytes: {why})" for n, _, size, why in lines[:3]]
                more = f" and {len(lines) - 3} more" if len(lines) > 3 else ""
                said.append(f"{len(lines)} {what}: {', '.join(parts)}{more}")
        return f"{path}: skipped {'; '.join(said)}"


def _parse(raw: bytes) -> tuple[Any, str | None]:
    """One line's JSON value, or why it is not complete JSON. orjson first (several times faster); what it
    refuses (NaN, huge integers, deep nesting) goes to the standard library, which decides."""
    try:
        return orjson.loads(raw), None
    except orjson.JSONDecodeError:
        try:
            return json.loads(raw.decode("utf-8")), None
        except UnicodeDecodeError:
            return None, "not UTF-8 (torn)"
        except (ValueError, RecursionError):
            return None, "not complete JSON" if not raw.endswith(b"\n") else "not JSON"


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """A descriptor of ``path`` opened without following a symlink, checked to be a regular file.
    Raises OSError (ELOOP for a symlink, EINVAL for a file that is not regular)."""
    fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if flags & os.O_ACCMODE == os.O_RDONLY:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def not_regular(path: Path) -> str | None:
    """Why ``path`` is not a regular file topoeval may open (a symlink, a folder, a FIFO), None when it is one
    or does not exist."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISLNK(info.st_mode):
        return "a symlink"
    return None if stat.S_ISREG(info.st_mode) else "not a regular file"


def open_for_reading(path: Path) -> BinaryIO:
    """``path`` opened for reading (binary) without following a symlink; OSError otherwise."""
    return os.fdopen(open_regular(path), "rb")


def refuse_irregular(path: Path) -> None:
    """One-line UserError when ``path`` is a symlink or not a regular file: the writer never follows one."""
    why = not_regular(path)
    if why is not None:
        raise UserError(f"{path}: is {why}; topoeval writes only regular files inside a run folder "
                        "(remove it, or run into another folder)")


def read_line(fh: BinaryIO, limit: int | None = None) -> tuple[bytes | None, int, bool]:
    """The next line of ``fh``, its length in bytes, and whether it ends in a newline; the line is None when
    it is longer than ``limit`` (default :data:`MAX_LINE_BYTES`): it is read past in chunks, never held.
    (b"", 0, False) at the end of the file."""
    limit = MAX_LINE_BYTES if limit is None else limit
    raw = fh.readline(limit + 1)
    if len(raw) <= limit or raw.endswith(b"\n"):
        return raw, len(raw), raw.endswith(b"\n")
    size = len(raw)
    while True:
        chunk = fh.readline(_CHUNK)
        size += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return None, size, chunk.endswith(b"\n")


def lines(fh: BinaryIO) -> Iterator[tuple[int, bytes | None, int, bool]]:
    """(byte offset, line or None when over the size limit, length, ends in a newline) of every line of ``fh``."""
    offset = 0
    while True:
        raw, size, newline = read_line(fh)
        if not size:
            return
        yield offset, raw, size, newline
        offset += size


def walk(path: Path, out: Scan) -> Iterator[tuple[int, int, str, dict[str, Any] | None]]:
    """(line number, byte offset, key, record) of every complete line of ``path`` that names a key, in file
    order: the record is None for a foreign line (the key then has no record in this file until a later
    line gives it one). What was skipped, and where the complete part ends, go into ``out``. A symlink or
    a file that is not regular is not read (one :class:`StoreWarning`)."""
    try:
        fh = open_for_reading(path)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EINVAL):
            warnings.warn(f"{path}: not read: it is a symlink or not a regular file (topoeval reads only regular "
                          "files inside a run folder)", StoreWarning, stacklevel=3)
            return
        raise
    with fh:
        for lineno, (offset, raw, size, newline) in enumerate(lines(fh), 1):
            if raw is None:  # over the limit: a whole line is kept (foreign), an unfinished last one is damage
                if newline:
                    out.foreign.append((lineno, offset, size, f"over {MAX_LINE_BYTES} bytes"))
                    out.good_end, out.newline = offset + size, True
                else:
                    out.damaged.append((lineno, offset, size, "not complete JSON"))
                continue
            value, damage = _parse(raw)
            if damage is not None:
                if raw.strip():
                    out.damaged.append((lineno, offset, size, damage))
                continue
            out.good_end, out.newline = offset + size, newline
            problem = record_problem(value)
            if problem is not None:
                out.foreign.append((lineno, offset, size, problem))
                if isinstance(value, dict) and isinstance(value.get("key"), str):
                    yield lineno, offset, value["key"], None
                continue
            yield lineno, offset, value["key"], value


def warn_skipped(found: Scan, path: Path, stacklevel: int = 3) -> None:
    """The file's one warning line, when anything was skipped."""
    if found.skipped:
        warnings.warn(found.report(path), StoreWarning, stacklevel=stacklevel)


def scan(path: Path, warn: bool = True) -> Scan:
    """Read an episode file line by line, whatever bytes it holds: a line that is not UTF-8, not JSON, not
    an episode record, or cut short is skipped (one :class:`StoreWarning` line names them); a key whose
    latest line is foreign has no record. Never writes."""
    out = Scan()
    latest: dict[str, tuple[int, dict[str, Any]] | None] = {}
    order: list[tuple[int, dict[str, Any]]] = []
    for lineno, _, key, rec in walk(path, out):
        latest[key] = (lineno, rec) if rec is not None else None
        if rec is not None:
            order.append((lineno, rec))
    out.records = [(n, rec) for n, rec in order if latest[rec["key"]] is not None]
    if warn:
        warn_skipped(out, path, stacklevel=4)
    return out


def slot_code(offset: int, finished: bool) -> int:
    """An index slot for a line starting at ``offset``: the offset (finished), or -(offset + 2) (an error)."""
    return offset if finished else -offset - 2


def record_at(fh: BinaryIO, code: int, path: Path, key: str) -> dict[str, Any]:
    """The record whose line starts where ``code`` (an index slot of an episode index) says; ``key``: the key
    it was indexed under, checked, and the record checked again (a line of another key, or one that is not
    a record, means the file was rewritten since)."""
    fh.seek(code if code >= 0 else -code - 2)
    raw, _, _ = read_line(fh)
    rec, why = _parse(raw) if raw is not None else (None, f"over {MAX_LINE_BYTES} bytes")
    if why is None:
        why = record_problem(rec)
        if why is None and isinstance(rec, dict) and rec["key"] != key:
            why = f"another key's line where {key}'s was"
    if why is not None or not isinstance(rec, dict):
        raise UserError(f"{path}: changed while it was read ({why}); is another process writing it?")
    return rec
