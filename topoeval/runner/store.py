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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.files import atomic_file, write_json_atomic

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


def scan(path: Path, warn: bool = True) -> Scan:
    """Read an episode file line by line, whatever bytes it holds: a line that is not UTF-8, not JSON, not
    a record with a key, or cut short is skipped (one :class:`StoreWarning` line names them). Never writes."""
    out = Scan()
    offset = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            size = len(raw)
            why = None
            try:
                rec = json.loads(raw.decode("utf-8"))
                if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
                    why = "not an episode record"
            except UnicodeDecodeError:
                why = "not UTF-8 (torn)"
            except (ValueError, RecursionError):
                why = "not complete JSON" if not raw.endswith(b"\n") else "not JSON"
            if why is None:
                out.records.append((lineno, rec))
                out.good_end, out.newline = offset + size, raw.endswith(b"\n")
            elif raw.strip():
                out.damaged.append((lineno, offset, size, why))
            offset += size
    if out.damaged and warn:
        warnings.warn(out.report(path), StoreWarning, stacklevel=3)
    return out


class EpisodeStore:
    """Episodes of one run folder, keyed by episode key: the writer's side. Open it only while holding
    the folder (:func:`topoeval.runner.lock.lock_run`): opening repairs a damaged file (a torn tail is cut
    off, a last line without its newline gets one) so the next record starts on a line of its own.

    ``records`` keeps each key's latest record (what :meth:`_keep` returns: the whole record today; what a
    resume needs would do, as the key and its status decide what runs again)."""

    def __init__(self, run_dir: Path, name: str = EPISODES):
        self.path = run_dir / name
        self.records: dict[str, dict[str, Any]] = {}
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self._load()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)

    def _load(self) -> None:
        found = scan(self.path)
        for _, rec in found.records:
            self.records[rec["key"]] = self._keep(rec)  # the latest line of a key wins
        if found.damaged or not found.newline:
            self._repair(found)

    def _keep(self, record: dict[str, Any]) -> dict[str, Any]:
        """What the store keeps of a record in memory (the whole of it)."""
        return record

    def _repair(self, found: Scan) -> None:
        """Make the file end in a newline after its last readable line: cut a torn tail off (in place), or
        rewrite the file without its damaged lines (a scratch file, fsync, an atomic replace)."""
        if found.tail_only:
            with open(self.path, "r+b") as fh:
                fh.truncate(found.good_end)
                if not found.newline:
                    fh.seek(found.good_end)
                    fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
            return
        bad = {n for n, _, _, _ in found.damaged}
        with open(self.path, "rb") as src, atomic_file(self.path) as dst:
            for lineno, raw in enumerate(src, 1):
                if lineno not in bad:
                    dst.write(raw if raw.endswith(b"\n") else raw + b"\n")

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def finished(self, key: str) -> bool:
        """Whether ``key`` has a record that a re-run keeps (any status but ``error``)."""
        return key in self.records and is_finished(self.records[key])

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line (on disk when this returns). A record that cannot be written as
        JSON raises ValueError/TypeError before anything is written; a full disk raises OSError."""
        data = record_line(record)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        self.records[record["key"]] = self._keep(record)

    def close(self) -> None:
        """Sync and close the file; the descriptor is closed even when the sync fails (a full disk)."""
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def record_line(record: dict[str, Any]) -> bytes:
    """A record as one JSONL line (UTF-8; a lone surrogate kept as its JSON escape, never an error)."""
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


def is_finished(record: dict[str, Any]) -> bool:
    """An episode a re-run keeps: it ended with any status but ``error`` (an infrastructure failure)."""
    return record.get("status") != "error"


def finished_keys(run_dir: str | Path) -> set[str]:
    """Keys of the run folder's finished episodes (what a re-run skips), in episodes.jsonl and in
    the files of any shards run into the same folder."""
    return {key for path in episode_files(run_dir) for key, r in read_records(path).items() if is_finished(r)}


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
