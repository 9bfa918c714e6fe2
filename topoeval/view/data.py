"""What the viewer's page reads, as JSON-ready dicts: the runs list, one run (its headline, tables,
pictures, cells and the compact episode index), chunks of episode records with the recorded
system prompts and tool lists of their topologies, and a cell's "what flipped" page
(:mod:`topoeval.view.flips`).

Everything comes from what the run folder recorded, read as files: run.json and summary.json are
read as JSON, prompts.json by :func:`topoeval.runner.prompts.read_prompts`, episodes by
:mod:`topoeval.view.index`. Nothing here resolves a protocol, loads a suite or runs a command, and
no file is read through a symlink (:func:`topoeval.core.safe_paths.read_regular`). A run folder written
before prompts.json existed shows no system prompt, and the page says so.

The server sends these payloads as JSON (:func:`as_json`, ``data/<...>.json``); the static export
writes them as scripts (:func:`as_script`, ``data/<...>.js``) because a page opened from ``file://``
cannot fetch. The relative paths are otherwise the same (:func:`data_path`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from topoeval.analysis.diagnostics import no_tool_call_notice
from topoeval.core.errors import UserError
from topoeval.core.safe_paths import read_regular
from topoeval.metrics.dimensions import DIMENSIONS
from topoeval.report.html import md_tables_to_html, render_headline
from topoeval.report.markdown import render_report_md
from topoeval.runner.prompts import RecordedPrompts, read_prompts
from topoeval.runner.store import RUN_JSON
from topoeval.view.flips import flips_payload
from topoeval.view.index import STATUSES, SUMMARY, EpisodeIndex, find_runs, is_run, path_id, run_id, short_names
from topoeval.view.kinds import empty_pictures, is_matrix, is_sweep, matrix_headline, sweep_headline

#: episodes per chunk file
CHUNK = 100
#: episodes the server indexes before it sends a run's first page (the rest when the page asks)
FIRST = 2000
#: pictures a run folder may hold, shown in this order (then any other PNG)
PICTURES = ("sweep.png", "matrix.png", "axis_effects.png", "plot_ladder.png", "plot_fewshot.png", "plot_dimensions.png")
#: the names a picture may have (no folder: a picture lies in its run folder itself)
PICTURE_NAME = re.compile(r"^[\w.-]+\.png$")
#: run.json or summary.json larger than this is not read (they are kilobytes)
MAX_JSON_BYTES = 64 * 1024 * 1024
#: a PNG larger than this is not served or copied
MAX_PICTURE_BYTES = 256 * 1024 * 1024
#: shown for a run folder without prompts.json
NO_PROMPTS = ("This run predates recorded prompts (prompts.json), so its system prompts and tool lists are "
              "not shown.")


def data_path(*parts: str, ext: str = ".js") -> str:
    """The relative URL of a payload: ``data/runs``, ``data/<run>``, ``data/<run>/<chunk>``,
    ``data/<run>/flips/<cell>`` (and, from the server only, ``data/<run>/all``: the whole run after a
    first page), with ``ext``: ``.js`` for
    the export's scripts, ``.json`` for the server's JSON."""
    return "data/" + "/".join(parts) + ext


def _dumps(payload: Any) -> bytes:
    """UTF-8 JSON, by orjson (fast on a run's index of 100,000 rows), or by json where orjson refuses
    a value (an integer past 64 bits, a lone surrogate)."""
    try:
        return orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(payload, separators=(",", ":")).encode()


def as_json(payload: Any) -> bytes:
    """A payload as the server sends it: JSON (``application/json``), fetched by the page."""
    return _dumps(payload)


def as_script(name: str, payload: Any) -> bytes:
    """A payload as the export writes it: a script calling ``topoevalData(name, payload)`` (a page
    opened from file:// cannot fetch), UTF-8, with ``</`` escaped."""
    return b"topoevalData(" + json.dumps(name).encode() + b"," + _dumps(payload).replace(b"</", b"<\\/") + b");\n"


def _read(path: Path) -> dict[str, Any]:
    raw = read_regular(path, MAX_JSON_BYTES)
    try:
        value = json.loads(raw) if raw is not None else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _names(values: Any) -> list[str]:
    """The strings of a list (a foreign run.json or summary.json may hold anything)."""
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def _cells(summary: dict[str, Any]) -> list[dict[str, Any]]:
    cells = summary.get("cells")
    return [c for c in cells if isinstance(c, dict)] if isinstance(cells, list) else []


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _rendered(render: Any, summary: dict[str, Any]) -> str:
    """A summary rendered as HTML, or "" where a foreign summary.json does not render."""
    try:
        return str(render(summary)) if summary else ""
    except Exception:  # a summary.json not written by topoeval: the run shows without its tables
        return ""


def _notice(summary: dict[str, Any]) -> str | None:
    """The sentence saying which cells (nearly) never made a valid tool call
    (:func:`topoeval.analysis.diagnostics.no_tool_call_notice`), or None."""
    try:
        notice = no_tool_call_notice(_cells(summary))
    except Exception:  # a summary.json not written by topoeval: no notice rather than no page
        return None
    return notice if isinstance(notice, str) else None


class Catalogue:
    """The runs under one folder, their indexes built on first use and kept."""

    def __init__(self, root: Path, first: int | None = None):
        self.root = Path(root)
        #: a run's first payload holds this many episodes, the rest being read when the page asks for
        #: the whole run (:meth:`run_payload`); None: every payload is the whole run
        self.first = first
        self.runs = {run_id(self.root, d): d for d in find_runs(self.root)}
        #: whether a run's parent folder is read when it is a sweep folder under the root (:meth:`sweep`)
        self.sweeps = True
        #: what the runs list says they lie under (the root folder; a label for runs given one by one)
        self.label = str(self.root)
        self._paths = {rid: self._relative(d) for rid, d in self.runs.items()}
        self._indexes: dict[str, EpisodeIndex] = {}
        self._prompts: dict[str, RecordedPrompts | None] = {}  # run -> its prompts.json (None: none)

    def index(self, rid: str, until: int | None = None) -> EpisodeIndex:
        """A run's index, read as far as its ``until``-th episode at least (None: whole)."""
        index = self._indexes.get(rid)
        if index is None:
            index = self._indexes[rid] = EpisodeIndex.build(self.runs[rid], until)
        elif not index.complete and (until is None or len(index) < until):
            index.extend(until)
        return index

    @classmethod
    def of_runs(cls, run_dirs: Sequence[Path], label: str) -> Catalogue:
        """The run folders given, each shown by its shortest distinct trailing path
        (:func:`~topoeval.view.index.short_names`; no absolute path shown), under ``label``. A folder that
        is no run folder (:func:`~topoeval.view.index.is_run`) is refused in one line."""
        folders = list({Path(d).resolve(): Path(d) for d in run_dirs}.values())  # a folder given twice: once
        for folder in folders:
            if not is_run(folder):
                raise UserError(f"{folder}: not a run folder the viewer can show (run.json or summary.json beside "
                                "episode files, regular files)")
        catalogue = cls.__new__(cls)
        catalogue.root, catalogue.first, catalogue.label = Path("."), None, label
        catalogue.sweeps = False  # runs given one by one: nothing beside them is read
        names = short_names(folders)
        catalogue.runs = {path_id(n): f for n, f in zip(names, folders, strict=True)}
        catalogue._paths = {path_id(n): n for n in names}
        catalogue._indexes, catalogue._prompts = {}, {}
        return catalogue

    def _relative(self, folder: Path) -> str:
        return folder.relative_to(self.root).as_posix() if folder != self.root else "."


    def runs_payload(self) -> dict[str, Any]:
        rows = []
        for rid, folder in self.runs.items():
            run, summary = _read(folder / RUN_JSON), _read(folder / SUMMARY)
            cells = [c for c in _cells(summary) if isinstance(c.get("model"), str)
                     and isinstance(c.get("topology"), str)]
            protocol, planned = run.get("protocol"), run.get("models")
            models = list(dict.fromkeys(c["model"] for c in cells)) or [
                m if isinstance(m, str) else str(m.get("name", "?")) if isinstance(m, dict) else "?"
                for m in (planned if isinstance(planned, list) else [])]
            rows.append({
                "id": rid, "path": self._paths[rid],
                "protocol": str(summary.get("protocol") or (protocol.get("name") if isinstance(protocol, dict)
                                                            else None) or "?"),
                "models": models, "episodes": sum(_number(c.get("n_episodes")) for c in cells),
                "errors": sum(_number(c.get("n_errors")) for c in cells),
                "started": run.get("started") if isinstance(run.get("started"), str) else None,
                "kind": "sweep" if self.sweep(rid) else "transfer matrix" if is_matrix(summary) else None,
                "topologies": list(dict.fromkeys(c["topology"] for c in cells)),
            })
        return {"root": self.label, "runs": rows}

    def sweep(self, rid: str) -> tuple[Path, dict[str, Any]] | None:
        """The sweep folder holding a run (``topoeval sweep ... --out DIR`` writes the run under DIR) and its
        summary.json: the run folder's parent, when it lies at or under the root and its summary.json is a
        sweep's; None otherwise, and always for runs given one by one (:meth:`of_runs`)."""
        parent = self.runs[rid].parent
        if not self.sweeps:
            return None
        try:
            inside = parent.resolve().is_relative_to(self.root.resolve())
        except OSError:
            return None
        if not inside or parent.is_symlink():
            return None
        summary = _read(parent / SUMMARY)
        return (parent, summary) if is_sweep(summary) else None

    def _picture_files(self, rid: str) -> dict[str, Path]:
        """Each picture's name and file, in the order shown: the run folder's PNGs (regular files; a symlink
        is never listed) less those that hold no data (:func:`~topoeval.view.kinds.empty_pictures`), then the
        sweep folder's that the run folder does not hold."""
        found: dict[str, Path] = {}
        sweep = self.sweep(rid)
        empty = empty_pictures(_read(self.runs[rid] / SUMMARY))
        for folder, skip in ((self.runs[rid], empty), *(((sweep[0], set()),) if sweep else ())):
            try:
                with os.scandir(folder) as entries:
                    names = sorted(e.name for e in entries if PICTURE_NAME.match(e.name)
                                   and e.is_file(follow_symlinks=False))
            except OSError:
                continue
            for n in names:
                if n not in skip and n not in found:
                    found[n] = folder / n
        return {n: found[n] for n in [*[p for p in PICTURES if p in found], *[n for n in found if n not in PICTURES]]}

    def pictures(self, rid: str) -> list[str]:
        """The pictures of a run, in the order shown (:meth:`_picture_files`)."""
        return list(self._picture_files(rid))

    def picture(self, rid: str, name: str) -> bytes | None:
        """A picture's bytes: one the run lists, read as a regular file (no symlink followed)."""
        path = self._picture_files(rid).get(name)
        return None if path is None else read_regular(path, MAX_PICTURE_BYTES)

    def prompts(self, rid: str) -> RecordedPrompts | None:
        """The run's prompts.json (read once), or None for a folder written before prompts were recorded."""
        if rid not in self._prompts:
            self._prompts[rid] = read_prompts(self.runs[rid])
        return self._prompts[rid]

    def run_payload(self, rid: str, whole: bool = True) -> dict[str, Any]:
        """A run's page: headline, tables, pictures and its episode index — whole, or (``whole=False``
        with ``first`` set) as far as the first ``first`` episodes, ``complete`` saying which."""
        folder = self.runs[rid]
        summary, run = _read(folder / SUMMARY), _read(folder / RUN_JSON)
        index = self.index(rid, None if whole else self.first)
        cell_info = {(c.get("model"), c.get("baseline"), c.get("topology")): c for c in _cells(summary)}
        cells = [{"model": m, "baseline": b, "topology": t, "role": (cell_info.get((m, b, t)) or {}).get("role")}
                 for m, b, t in index.cells]
        protocol = run.get("protocol")
        sweep = self.sweep(rid)
        return {
            "id": rid, "path": self._paths[rid],
            "protocol": str(summary.get("protocol") or (protocol.get("name") if isinstance(protocol, dict)
                                                        else None) or "") or None,
            "headline": _rendered(matrix_headline if is_matrix(summary) else render_headline, summary),
            "sweep": _rendered(sweep_headline, sweep[1]) if sweep else "",
            "notice": _notice(summary),
            "tables": _rendered(lambda s: md_tables_to_html(render_report_md(s)), summary),
            "pictures": self.pictures(rid), "cells": cells, "tasks": index.tasks, "episodes": index.rows,
            "statuses": list(STATUSES), "dimensions": list(DIMENSIONS), "chunk": CHUNK,
            "complete": index.complete, "skipped": index.skipped,
            "prompts_recorded": self.prompts(rid) is not None, "no_prompts": NO_PROMPTS,
        }

    def flips_payload(self, rid: str, cell: int) -> dict[str, Any]:
        """A cell's "what flipped" page against each other model of its baseline and topology, from the
        whole run (:func:`topoeval.view.flips.flips_payload`)."""
        return flips_payload(self.index(rid), cell)

    def chunk_payload(self, rid: str, k: int) -> dict[str, Any]:
        """Episodes ``k * CHUNK`` on, and the recorded system prompt and tool list of each of their
        topologies (from prompts.json; none for a run written before it)."""
        records = self.index(rid).records(k * CHUNK, (k + 1) * CHUNK)
        recorded = self.prompts(rid)
        topologies = dict.fromkeys(t for r in records if isinstance(t := r.get("topology"), str))
        prompts = {t: recorded.topologies[t].model_dump() for t in topologies
                   if recorded is not None and t in recorded.topologies}
        return {"records": records, "prompts": prompts}
