"""The runs under a folder, and a lazy index of each run's episodes.

A run folder is one that holds ``run.json`` or ``summary.json`` beside its episode files. Its
episodes are never all parsed at once: :class:`EpisodeIndex` reads each file line by line and keeps,
per episode, where its line starts and ends (a byte offset and a length) and a few keys read from
the line's text without parsing the record — the episode key at its head, the status, and the
success and dimension scores from the first bytes of the scores object (the record's last key). A
line that is not laid out that way is parsed whole. The latest line of a key is its record, as in the run folder itself
(:mod:`topoeval.runner.store`). One record is then read by seeking to its offset.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topoeval.metrics.dimensions import DIMENSIONS
from topoeval.runner.store import RUN_JSON, episode_files

SUMMARY = "summary.json"
_KEY = re.compile(rb'\{"key": "([^"\\]*(?:\\.[^"\\]*)*)"')
_STATUS = re.compile(rb'"status": "(\w+)"')
_SCORES = b', "scores": '
#: (bit of the failing mask, the dimension's name as it opens its value in the scores object's text)
_DIMS = [(1 << i, f'"{name}": '.encode()) for i, name in enumerate(DIMENSIONS)]
_VALUE = re.compile(rb"(null|[-0-9.eE+]+)[,}]")
_WINDOW = 600
#: status codes in the compact index
STATUSES = ("done", "error")


def find_runs(root: Path) -> list[Path]:
    """Every run folder at or under ``root`` (run.json or summary.json beside episode files), sorted."""
    root = Path(root)
    found = {p.parent for name in (RUN_JSON, SUMMARY) for p in root.rglob(name)}
    return sorted(d for d in found if episode_files(d))


def run_id(root: Path, run_dir: Path) -> str:
    """A stable id of a run folder under ``root``, safe in URLs and file names."""
    rel = run_dir.resolve().relative_to(root.resolve()).as_posix() if run_dir != root else "."
    return "r" + hashlib.sha1(rel.encode()).hexdigest()[:10]


@dataclass
class EpisodeIndex:
    """Where each episode of a run lies, and the keys the viewer filters on (see the module docstring)."""

    files: list[Path]
    #: per episode: (file number, byte offset, length)
    where: list[tuple[int, int, int]] = field(default_factory=list)
    #: (model, baseline, topology) of each cell, in order of first appearance
    cells: list[tuple[str, str, str]] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    #: per episode: [cell, task, sample, status (index in STATUSES, or the text), success (1/0/None), failing]
    #: where failing is a bit mask over DIMENSIONS (bit i: dimension i applies and scored below 1)
    rows: list[list[Any]] = field(default_factory=list)

    @classmethod
    def build(cls, run_dir: Path) -> EpisodeIndex:
        index = cls(files=episode_files(run_dir))
        cell_no: dict[tuple[str, str, str], int] = {}
        task_no: dict[str, int] = {}
        by_key: dict[str, int] = {}
        for f, path in enumerate(index.files):
            if path.stat().st_size == 0:
                continue
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                pos, size = 0, len(mm)
                while pos < size:  # one find per line, no copy of the line: the keys are read in place
                    start, nl = pos, mm.find(b"\n", pos)
                    pos = size if nl < 0 else nl + 1
                    keys = _keys(mm, start, pos)
                    if keys is None:
                        continue  # a torn or foreign line: the run folder skips it too
                    key, status, success, failing = keys
                    model, baseline, topology, task, sample = key.rsplit("|", 4)
                    cell = cell_no.setdefault((model, baseline, topology), len(cell_no))
                    t = task_no.setdefault(task, len(task_no))
                    row = [cell, t, int(sample) if sample.isdigit() else sample,
                           STATUSES.index(status) if status in STATUSES else status,
                           success, failing]
                    if key in by_key:  # a retried episode: the latest line wins, in the first one's place
                        n = by_key[key]
                        index.where[n], index.rows[n] = (f, start, pos - start), row
                    else:
                        by_key[key] = len(index.rows)
                        index.where.append((f, start, pos - start))
                        index.rows.append(row)
        index.cells = list(cell_no)
        index.tasks = list(task_no)
        return index

    def __len__(self) -> int:
        return len(self.rows)

    def records(self, start: int, stop: int) -> list[dict[str, Any]]:
        """The records of episodes ``start`` to ``stop - 1`` (each read by seeking to its line)."""
        out = []
        handles: dict[int, Any] = {}
        try:
            for n in range(max(0, start), min(stop, len(self.where))):
                f, offset, length = self.where[n]
                fh = handles.get(f) or handles.setdefault(f, open(self.files[f], "rb"))
                fh.seek(offset)
                out.append(json.loads(fh.read(length)))
        finally:
            for fh in handles.values():
                fh.close()
        return out


def _keys(buf: Any, start: int, end: int) -> tuple[str, str, int | None, int] | None:
    """(key, status, success, failing) of the episode line ``buf[start:end]``, read from its text in
    place (see :func:`_scores`); the whole line parsed only when it is not laid out as the runner writes
    it. None for a line that is no episode record."""
    head, status, cut = _KEY.match(buf, start, end), _STATUS.search(buf, start, start + 8192), buf.rfind(
        _SCORES, start, end)
    if head is not None and status is not None and cut > 0:
        raw = head.group(1)
        try:
            key = raw.decode() if b"\\" not in raw else json.loads(b'"' + raw + b'"')
        except ValueError:
            key = None
        if key is not None:
            return (key, status.group(1).decode(), *_scores(buf, cut, min(end, cut + _WINDOW)))
    try:
        rec = json.loads(buf[start:end])
        scores = rec.get("scores") or {}
        return rec["key"], rec["status"], _success(scores), _failing(scores)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _scores(buf: Any, cut: int, stop: int) -> tuple[int | None, int]:
    """(success, failing) from the text of a scores object: each name found once (the dimensions come
    before scores.reasons, whose keys repeat their names), its value judged by its first bytes — a
    dimension lies in [0, 1], so anything but ``1``/``1.0`` or ``null`` is below 1."""
    success: int | None = None
    at = buf.find(b'"success": ', cut, stop)
    if at >= 0 and buf[at + 11:at + 14] != b"nul":
        m = _VALUE.match(buf, at + 11, stop)
        success = int(float(m.group(1)) >= 1) if m else None
    mask = 0
    for bit, label in _DIMS:
        at = buf.find(label, cut, stop)
        if at >= 0:
            v = buf[at + len(label):at + len(label) + 3]
            if v != b"nul" and v != b"1.0" and v[:2] not in (b"1,", b"1}"):
                mask |= bit
    return success, mask


def _success(scores: dict[str, Any]) -> int | None:
    value = scores.get("success")
    return None if value is None else int(value >= 1)


def _failing(scores: dict[str, Any]) -> int:
    mask = 0
    for i, dim in enumerate(DIMENSIONS):
        value = scores.get(dim)
        if isinstance(value, (int, float)) and value < 1:
            mask |= 1 << i
    return mask
