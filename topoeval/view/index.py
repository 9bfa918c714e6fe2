"""The runs under a folder, and a lazy index of each run's episodes.

A run folder is one that holds ``run.json`` or ``summary.json`` beside its episode files. Its
episodes are never all parsed at once: :class:`EpisodeIndex` maps each file into memory and keeps,
per episode, where its line starts and ends (a byte offset and a length) and the few keys the
viewer filters on, read from the line's text by two regular expressions matched in place: the
episode key and status at the line's head (:data:`_HEAD`) and success and the dimensions at the
head of the scores object, the record's last key (:data:`_SCORES_HEAD`). A line that is not laid
out as the runner writes it is parsed whole. The latest line of a key is its record, as in the run
folder itself (:mod:`topoeval.runner.store`). One record is then read by seeking to its offset.
"""

from __future__ import annotations

import gc
import hashlib
import json
import mmap
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from topoeval.metrics.dimensions import DIMENSIONS
from topoeval.runner.store import RUN_JSON, episode_files

SUMMARY = "summary.json"
#: the key (group 1) and status (group 2) of a line as the runner writes it: no object opens before
#: the status, so the status found is the record's own
_HEAD = re.compile(rb'\{"key": "([^"\\]*(?:\\.[^"\\]*)*)"[^{]*, "status": "([^"\\]*)"')
_SCORES = b', "scores": '
_NUMBER = rb"(?:null|-?[0-9][0-9.eE+-]*)"
#: the head of a scores object as the runner writes it: success (group 1), the suite's other scores
#: (f1, ...), then the dimensions in DIMENSIONS' order (their text: group 2)
_SCORES_HEAD = re.compile(rb'\{"success": (' + _NUMBER + rb')(?:, "\w+": ' + _NUMBER + rb')*?, ('
                          + rb", ".join(b'"%s": ' % d.encode() + _NUMBER for d in DIMENSIONS) + rb")[,}]")
_DIM_VALUE = re.compile(rb'": (' + _NUMBER + rb")")
_SUCCESS = {b"1.0": 1, b"0.0": 0, b"null": None, b"1": 1, b"0": 0}
#: status codes in the compact index
STATUSES = ("done", "error")
_STATUS_NO = {s.encode(): n for n, s in enumerate(STATUSES)}


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
    #: where reading stands: (file number, byte offset of the next line); past the last file when complete
    at: tuple[int, int] = (0, 0)
    _cell_no: dict[tuple[str, str, str], int] = field(default_factory=dict, repr=False)
    _task_no: dict[str, int] = field(default_factory=dict, repr=False)
    _by_key: dict[str, int] = field(default_factory=dict, repr=False)
    #: the text of a scores object's dimensions -> its failing mask
    _masks: dict[bytes, int] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, run_dir: Path, until: int | None = None) -> EpisodeIndex:
        """The index of a run folder's episodes: all of them, or only as far as the ``until``-th (then
        :meth:`extend` reads on from there)."""
        index = cls(files=episode_files(run_dir))
        index.extend(until)
        return index

    @property
    def complete(self) -> bool:
        """Whether every line of the run's files has been read."""
        return self.at[0] >= len(self.files)

    def extend(self, until: int | None = None) -> None:
        """Read on until the index holds ``until`` episodes, or to the end of the files (None). The index
        is then the same as one built in one go: the run's first page can be shown before it is whole."""
        gc_was_on = gc.isenabled()
        gc.disable()  # 100,000 small rows: the collector's passes over them would cost a tenth of the build
        try:
            self._scan(sys.maxsize if until is None else until)
        finally:
            if gc_was_on:
                gc.enable()

    def _scan(self, until: int) -> None:
        cell_no, task_no, by_key, masks = self._cell_no, self._task_no, self._by_key, self._masks
        where, rows = self.where, self.rows
        head, scores_head, cut_len = _HEAD.match, _SCORES_HEAD.match, len(_SCORES)
        f, pos = self.at
        while f < len(self.files):
            path = self.files[f]
            if path.stat().st_size == 0:
                f, pos = f + 1, 0
                continue
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                size, find, rfind = len(mm), mm.find, mm.rfind
                while pos < size:  # per line: one find, two matches in place, no copy of the line
                    if len(rows) >= until:
                        break
                    start, nl = pos, find(b"\n", pos)
                    pos = size if nl < 0 else nl + 1
                    h = head(mm, start, pos)
                    cut = rfind(_SCORES, start, pos) if h is not None else -1
                    s = scores_head(mm, cut + cut_len, pos) if cut >= 0 else None
                    keys = _fast(h, s, masks) if h is not None and s is not None else None
                    if keys is None:
                        keys = _parsed(mm[start:pos])
                    if keys is None:
                        continue  # a torn or foreign line: the run folder skips it too
                    key, status, success, failing = keys
                    model, baseline, topology, task, sample = key.rsplit("|", 4)
                    row = [cell_no.setdefault((model, baseline, topology), len(cell_no)),
                           task_no.setdefault(task, len(task_no)), int(sample) if sample.isdigit() else sample,
                           status, success, failing]
                    n = by_key.setdefault(key, len(rows))
                    if n < len(rows):  # a retried episode: the latest line wins, in the first one's place
                        where[n], rows[n] = (f, start, pos - start), row
                    else:
                        where.append((f, start, pos - start))
                        rows.append(row)
            if pos < size:
                break
            f, pos = f + 1, 0
        self.at = (f, pos)
        self.cells = list(cell_no)
        self.tasks = list(task_no)

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
                out.append(loads(fh.read(length)))
        finally:
            for fh in handles.values():
                fh.close()
        return out


#: (key, status, success, failing) of one line, as a row of the index holds them
Keys = tuple[str, int | str, int | None, int]


def _fast(head: re.Match[bytes], scores: re.Match[bytes], masks: dict[bytes, int]) -> Keys | None:
    """(key, status, success, failing) from the two matches of a line (see the module docstring), or
    None when their text does not read (the line is then parsed whole). A dimension lies in [0, 1], so
    any value but 1 or null is below 1; the failing mask of one text of the dimensions is worked out
    once, in ``masks``."""
    raw, status = head.group(1, 2)
    success_text, dims = scores.group(1, 2)
    failing = masks.get(dims)
    try:
        key = raw.decode() if b"\\" not in raw else json.loads(b'"' + raw + b'"')
        code: int | str | None = _STATUS_NO.get(status)
        if code is None:
            code = status.decode()
        success = _SUCCESS.get(success_text, -1)
        if success == -1:
            success = int(float(success_text) >= 1)
        if failing is None:
            failing = masks[dims] = sum(1 << i for i, v in enumerate(_DIM_VALUE.findall(dims))
                                        if v != b"null" and float(v) < 1)
    except ValueError:
        return None
    return key, code, success, failing


def _parsed(line: bytes) -> Keys | None:
    """The same keys from a line parsed whole (one not laid out as the runner writes it); None for a
    line that is no episode record."""
    try:
        rec = loads(line)
        scores = rec.get("scores") or {}
        status = rec["status"]
        return rec["key"], STATUSES.index(status) if status in STATUSES else status, _success(scores), \
            _failing(scores)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def loads(text: bytes) -> Any:
    """A JSON text parsed by orjson, or by the standard library where orjson refuses what Python's
    json writes (NaN, Infinity, an integer past 64 bits)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


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
