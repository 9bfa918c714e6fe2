"""The runs under a folder, and a lazy index of each run's episodes.

A run folder is one that holds ``run.json`` or ``summary.json`` beside its episode files. Its
episodes are never all parsed at once: :class:`EpisodeIndex` maps each file into memory and keeps,
per episode, where its line starts and ends (a byte offset and a length) and the few keys the
viewer filters on, read from the line's text by two regular expressions matched in place: the
episode key and status at the line's head (:data:`_HEAD`) and success and the dimensions at the
head of the scores object, the record's last key (:data:`_SCORES_HEAD`), and its collateral damage,
the scores' last ``"collateral": `` key found from the line's end (:data:`_COLLATERAL`). A line that is not laid
out as the runner writes it is parsed whole. The latest line of a key is its record, as in the run
folder itself (:mod:`topoeval.runner.store`). One record is then read by seeking to its offset.

A run folder may come from anyone. Run discovery never follows a symlinked folder, an episode file
that is a symlink (or not a regular file) is not read, and a line that is no episode record is skipped
and counted in :attr:`EpisodeIndex.skipped`: the rest of the run shows. A line parsed whole is checked
by :func:`topoeval.runner.records.record_problem`, every reader's check (a key that is not
``model|baseline|topology|task_id|sample`` of its fields, ``"scores": null``, ``"messages": "x"``, ...);
a line read in place must hold such a key, a string status, a scores object and ``"messages": [`` where
the runner writes them. A record read back is checked whole, and one that fails comes back as a stub
saying why (:func:`unreadable`), which the page shows instead of the episode.
"""

from __future__ import annotations

import gc
import hashlib
import json
import mmap
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from topoeval.metrics.dimensions import DIMENSIONS
from topoeval.runner.episode_file import open_for_reading
from topoeval.runner.records import record_problem
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
#: what follows the status in a line as the runner writes it, up to the messages list's start: scalar
#: fields (final_answer, turns, ...), then ``"messages": [`` opening an object or closing at once
_TO_MESSAGES = re.compile(rb'(?:, "\w+": (?:null|true|false|-?[0-9][0-9.eE+-]*|"[^"\\]*(?:\\.[^"\\]*)*"))*'
                          rb', "messages": \[[{\]]')
#: a scores object's collateral damage as the runner writes it (``collateral`` then ``collateral_irreversible``,
#: after the reasons: :func:`topoeval.metrics.collateral.collateral_scores`), matched where its last
#: ``"collateral": `` starts (a string cannot hold that text: its quotes would be escaped)
_COLLATERAL_KEY = b'"collateral": '
_COLLATERAL = re.compile(rb'"collateral": (' + _NUMBER + rb'), "collateral_irreversible": (' + _NUMBER + rb")[,}]")
#: an episode's collateral damage in the index: None where it is not measured (the suite defines no scope, or
#: the record predates collateral), else one of these
NO_COLLATERAL, COLLATERAL, IRREVERSIBLE_COLLATERAL = 0, 1, 2
_DIM_VALUE = re.compile(rb'": (' + _NUMBER + rb")")
_SUCCESS = {b"1.0": 1, b"0.0": 0, b"null": None, b"1": 1, b"0": 0}
#: status codes in the compact index
STATUSES = ("done", "error")
_STATUS_NO = {s.encode(): n for n, s in enumerate(STATUSES)}


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file itself (not a symlink to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def run_files(run_dir: Path) -> list[Path]:
    """A run folder's episode files that are regular files (one that is a symlink is never read)."""
    return [p for p in episode_files(run_dir) if _regular(p)]


def is_run(folder: Path) -> bool:
    """Whether ``folder`` is a run folder: run.json or summary.json beside episode files, all regular files."""
    return any(_regular(folder / n) for n in (RUN_JSON, SUMMARY)) and bool(run_files(folder))


def find_runs(root: Path) -> list[Path]:
    """Every run folder at or under ``root`` (:func:`is_run`), sorted. A symlinked folder under ``root``
    is not entered: a run is found where it lies."""
    root = Path(root)
    found = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        here = Path(folder)
        if any(n in names for n in (RUN_JSON, SUMMARY)) and is_run(here):
            found.append(here)
    return sorted(found)


def run_id(root: Path, run_dir: Path) -> str:
    """A stable id of a run folder under ``root``, safe in URLs and file names."""
    rel = run_dir.resolve().relative_to(root.resolve()).as_posix() if run_dir != root else "."
    return path_id(rel)


def path_id(path: str) -> str:
    """The id of a run shown as ``path`` (its folder under the root, or a name given to it): ``r`` and ten
    hex digits."""
    return "r" + hashlib.sha1(path.encode()).hexdigest()[:10]


def short_names(run_dirs: list[Path]) -> list[str]:
    """A name per run folder, in order: the fewest trailing parts of its path (``solo``; ``a/ref`` beside
    ``b/ref``) that no other folder's path ends with (the folders' absolute paths are not shown)."""
    parts = [Path(d).resolve().parts for d in run_dirs]
    names = []
    for i, mine in enumerate(parts):
        others = [p for j, p in enumerate(parts) if j != i]
        n = next((n for n in range(1, len(mine) + 1) if all(p[-n:] != mine[-n:] for p in others)), len(mine))
        names.append("/".join(mine[-n:]))
    return names


@dataclass
class EpisodeIndex:
    """Where each episode of a run lies, and the keys the viewer filters on (see the module docstring)."""

    files: list[Path]
    #: per episode: (file number, byte offset, length)
    where: list[tuple[int, int, int]] = field(default_factory=list)
    #: (model, baseline, topology) of each cell, in order of first appearance
    cells: list[tuple[str, str, str]] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    #: per episode: [cell, task, sample, status (index in STATUSES, or the text), success (1/0/None), failing,
    #: collateral] where failing is a bit mask over DIMENSIONS (bit i: dimension i applies and scored below 1)
    #: and collateral is NO_COLLATERAL, COLLATERAL (reversible damage only), IRREVERSIBLE_COLLATERAL, or None
    #: (not measured: no scope, or a record from before collateral)
    rows: list[list[Any]] = field(default_factory=list)
    #: where reading stands: (file number, byte offset of the next line); past the last file when complete
    at: tuple[int, int] = (0, 0)
    #: lines skipped so far: torn, or not an episode record the page can draw (see the module docstring)
    skipped: int = 0
    _cell_no: dict[tuple[str, str, str], int] = field(default_factory=dict, repr=False)
    _task_no: dict[str, int] = field(default_factory=dict, repr=False)
    _by_key: dict[str, int] = field(default_factory=dict, repr=False)
    #: the text of a scores object's dimensions -> its failing mask
    _masks: dict[bytes, int] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, run_dir: Path, until: int | None = None) -> EpisodeIndex:
        """The index of a run folder's episodes: all of them, or only as far as the ``until``-th (then
        :meth:`extend` reads on from there)."""
        index = cls(files=run_files(run_dir))
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
        to_messages, collateral_at = _TO_MESSAGES.match, _collateral_at
        f, pos = self.at
        while f < len(self.files):
            mm = _mapped(self.files[f])
            if mm is None:  # empty, or not a regular file: nothing to read
                f, pos = f + 1, 0
                continue
            with mm:
                size, find, rfind = len(mm), mm.find, mm.rfind
                while pos < size:  # per line: one find, two matches in place, no copy of the line
                    if len(rows) >= until:
                        break
                    start, nl = pos, find(b"\n", pos)
                    pos = size if nl < 0 else nl + 1
                    h = head(mm, start, pos)
                    if h is not None and not to_messages(mm, h.end(), pos):
                        h = None  # not the runner's layout up to its messages: parsed whole
                    cut = rfind(_SCORES, start, pos) if h is not None else -1
                    s = scores_head(mm, cut + cut_len, pos) if cut >= 0 else None
                    keys = _fast(h, s, masks, collateral_at(mm, cut, pos)) if h is not None and s is not None \
                        else None
                    if keys is None:
                        keys = _parsed(mm[start:pos])
                    if keys is None:
                        if mm[start:pos].strip():
                            self.skipped += 1  # a torn or foreign line: the run folder skips it too
                        continue
                    key, status, success, failing, collateral = keys
                    model, baseline, topology, task, sample = key.rsplit("|", 4)
                    row = [cell_no.setdefault((model, baseline, topology), len(cell_no)),
                           task_no.setdefault(task, len(task_no)), int(sample) if sample.isdigit() else sample,
                           status, success, failing, collateral]
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
        """The records of episodes ``start`` to ``stop - 1`` (each read by seeking to its line); one that
        no longer reads as an episode record comes back as :func:`unreadable`."""
        out = []
        handles: dict[int, IO[bytes] | None] = {}
        try:
            for n in range(max(0, start), min(stop, len(self.where))):
                f, offset, length = self.where[n]
                if f not in handles:
                    handles[f] = _open_regular(self.files[f])
                fh = handles[f]
                if fh is None:
                    out.append(unreadable("its file is no longer a regular file"))
                    continue
                fh.seek(offset)
                try:
                    rec = loads(fh.read(length))
                except (ValueError, RecursionError):
                    rec = None
                why = _problem(rec)
                out.append(rec if why is None else unreadable(why))
        finally:
            for handle in handles.values():
                if handle is not None:
                    handle.close()
        return out


def unreadable(why: str) -> dict[str, Any]:
    """What the page gets for an episode whose line does not read as a record: why, and nothing to draw."""
    return {"unreadable": why}


def _open_regular(path: Path) -> IO[bytes] | None:
    """``path`` opened for reading if it is a regular file, without following a symlink
    (:func:`topoeval.runner.episode_file.open_for_reading`, as the store reads); None otherwise."""
    try:
        return open_for_reading(path)
    except OSError:
        return None


def _mapped(path: Path) -> mmap.mmap | None:
    """A regular, non-empty file mapped into memory for reading (no symlink followed); None otherwise."""
    fh = _open_regular(path)
    if fh is None:
        return None
    with fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return None
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _problem(rec: Any) -> str | None:
    """Why a parsed line is not an episode record (:func:`topoeval.runner.records.record_problem`, the
    check every reader makes; None: it is one)."""
    return record_problem(rec)


#: (key, status, success, failing, collateral) of one line, as a row of the index holds them
Keys = tuple[str, int | str, int | None, int, int | None]
#: what :func:`_collateral_at` gives for a line whose collateral scores it cannot read in place
_UNREAD = -1


def _collateral_at(mm: mmap.mmap, cut: int, end: int) -> int | None:
    """The collateral code of a line from its scores' text (``cut``: where ``, "scores": `` starts): None where
    the scores hold no ``collateral`` (not measured), :data:`_UNREAD` where its values are not laid out as the
    runner writes them (the line is then parsed whole)."""
    at = mm.rfind(_COLLATERAL_KEY, cut, end)
    if at < 0:
        return None
    m = _COLLATERAL.match(mm, at, end)
    if m is None:
        return _UNREAD
    damage, irreversible = m.group(1, 2)
    try:
        return _collateral_code(None if damage == b"null" else float(damage),
                                None if irreversible == b"null" else float(irreversible))
    except ValueError:
        return _UNREAD


def _collateral_code(damage: Any, irreversible: Any) -> int | None:
    """An episode's collateral code (:data:`COLLATERAL` ...) from its scores ``collateral`` and
    ``collateral_irreversible``; None where ``collateral`` is no number (not measured)."""
    if isinstance(damage, bool) or not isinstance(damage, (int, float)):
        return None
    if not damage >= 1:
        return NO_COLLATERAL
    irr = isinstance(irreversible, (int, float)) and not isinstance(irreversible, bool) and irreversible >= 1
    return IRREVERSIBLE_COLLATERAL if irr else COLLATERAL


def _fast(head: re.Match[bytes], scores: re.Match[bytes], masks: dict[bytes, int],
          collateral: int | None = None) -> Keys | None:
    """(key, status, success, failing, collateral) from the two matches of a line (see the module docstring)
    and its collateral code (:func:`_collateral_at`), or None when their text does not read (the line is then
    parsed whole). A dimension lies in [0, 1], so any value but 1 or null is below 1; the failing mask of one
    text of the dimensions is worked out once, in ``masks``."""
    if collateral == _UNREAD:
        return None
    raw, status = head.group(1, 2)
    success_text, dims = scores.group(1, 2)
    failing = masks.get(dims)
    try:
        key = raw.decode() if b"\\" not in raw else json.loads(b'"' + raw + b'"')
        if key.count("|") < 4:
            return None
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
    return key, code, success, failing, collateral


def _parsed(line: bytes) -> Keys | None:
    """The same keys from a line parsed whole (one not laid out as the runner writes it); None for a
    line that is no episode record the page can draw (:func:`_problem`)."""
    try:
        rec = loads(line)
    except (ValueError, RecursionError):
        return None
    if _problem(rec) is not None:
        return None
    try:
        scores, status = rec["scores"], rec["status"]
        return rec["key"], STATUSES.index(status) if status in STATUSES else status, _success(scores), \
            _failing(scores), _collateral_code(scores.get("collateral"), scores.get("collateral_irreversible"))
    except (ValueError, TypeError):
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
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value >= 1)


def _failing(scores: dict[str, Any]) -> int:
    mask = 0
    for i, dim in enumerate(DIMENSIONS):
        value = scores.get(dim)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 1:
            mask |= 1 << i
    return mask
