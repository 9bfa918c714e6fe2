"""What the viewer's page reads, as JSON-ready dicts: the runs list, one run (its headline, tables,
pictures, cells, system prompts and the compact episode index), and chunks of episode records.

The same payloads are served by :mod:`topoeval.view.server` and written by
:mod:`topoeval.view.export`, at the same relative paths (:func:`data_path`), so the page does not
know which it reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from topoeval.metrics.dimensions import DIMENSIONS
from topoeval.report.html import md_tables_to_html, render_headline
from topoeval.report.markdown import render_report_md
from topoeval.runner.store import RUN_JSON
from topoeval.view.index import STATUSES, SUMMARY, EpisodeIndex, find_runs, run_id

#: episodes per chunk file
CHUNK = 100
#: episodes the server indexes before it sends a run's first page (the rest when the page asks)
FIRST = 2000
#: pictures a run folder may hold, shown in this order (then any other PNG)
PICTURES = ("matrix.png", "plot_ladder.png", "plot_fewshot.png", "plot_dimensions.png", "sweep.png")


def data_path(*parts: str) -> str:
    """The relative URL of a payload: ``data/runs.js``, ``data/<run>.js``, ``data/<run>/<chunk>.js``
    (and, from the server only, ``data/<run>/all.js``: the whole run after a first page)."""
    return "data/" + "/".join(parts) + ".js"


def as_script(name: str, payload: Any) -> bytes:
    """A payload as the script the page loads (a script, not a fetch: a static export opens from file://),
    UTF-8. Written by orjson (fast on a run's index of 100,000 rows), or by json where orjson refuses a
    value (an integer past 64 bits, a lone surrogate)."""
    try:
        text = orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        text = json.dumps(payload, separators=(",", ":")).encode()
    return b"topoevalData(" + json.dumps(name).encode() + b"," + text.replace(b"</", b"<\\/") + b");\n"


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class Catalogue:
    """The runs under one folder, their indexes built on first use and kept."""

    def __init__(self, root: Path, first: int | None = None):
        self.root = Path(root)
        #: a run's first payload holds this many episodes, the rest being read when the page asks for
        #: the whole run (:meth:`run_payload`); None: every payload is the whole run
        self.first = first
        self.runs = {run_id(self.root, d): d for d in find_runs(self.root)}
        self._indexes: dict[str, EpisodeIndex] = {}
        self._prompts: dict[str, dict[str, str | None]] = {}  # run -> topology -> its system prompt

    def index(self, rid: str, until: int | None = None) -> EpisodeIndex:
        """A run's index, read as far as its ``until``-th episode at least (None: whole)."""
        index = self._indexes.get(rid)
        if index is None:
            index = self._indexes[rid] = EpisodeIndex.build(self.runs[rid], until)
        elif not index.complete and (until is None or len(index) < until):
            index.extend(until)
        return index

    def runs_payload(self) -> dict[str, Any]:
        rows = []
        for rid, folder in self.runs.items():
            run, summary = _read(folder / RUN_JSON), _read(folder / SUMMARY)
            cells = summary.get("cells") or []
            models = list(dict.fromkeys(c["model"] for c in cells)) or [
                m if isinstance(m, str) else m.get("name", "?") for m in run.get("models") or []]
            rows.append({
                "id": rid, "path": folder.relative_to(self.root).as_posix() if folder != self.root else ".",
                "protocol": summary.get("protocol") or (run.get("protocol") or {}).get("name") or "?",
                "models": models, "episodes": sum(c.get("n_episodes") or 0 for c in cells),
                "errors": sum(c.get("n_errors") or 0 for c in cells), "started": run.get("started"),
                "topologies": list(dict.fromkeys(c["topology"] for c in cells)),
            })
        return {"root": str(self.root), "runs": rows}

    def pictures(self, rid: str) -> list[str]:
        folder = self.runs[rid]
        names = sorted(p.name for p in folder.glob("*.png"))
        return [n for n in PICTURES if n in names] + [n for n in names if n not in PICTURES]

    def run_payload(self, rid: str, whole: bool = True) -> dict[str, Any]:
        """A run's page: headline, tables, pictures and its episode index — whole, or (``whole=False``
        with ``first`` set) as far as the first ``first`` episodes, ``complete`` saying which."""
        folder = self.runs[rid]
        summary, run = _read(folder / SUMMARY), _read(folder / RUN_JSON)
        index = self.index(rid, None if whole else self.first)
        cell_info = {(c["model"], c["baseline"], c["topology"]): c for c in summary.get("cells") or []}
        cells = [{"model": m, "baseline": b, "topology": t, "role": (cell_info.get((m, b, t)) or {}).get("role")}
                 for m, b, t in index.cells]
        return {
            "id": rid, "path": folder.relative_to(self.root).as_posix() if folder != self.root else ".",
            "protocol": summary.get("protocol") or (run.get("protocol") or {}).get("name"),
            "headline": render_headline(summary) if summary else "",
            "tables": md_tables_to_html(render_report_md(summary)) if summary else "",
            "pictures": self.pictures(rid), "cells": cells, "tasks": index.tasks, "episodes": index.rows,
            "statuses": list(STATUSES), "dimensions": list(DIMENSIONS), "chunk": CHUNK,
            "complete": index.complete,
        }

    def chunk_payload(self, rid: str, k: int) -> dict[str, Any]:
        """Episodes ``k * CHUNK`` on, and the system prompts of their topologies (rebuilding a prompt
        loads its suite, so it is done when an episode is shown, not when the run opens)."""
        records = self.index(rid).records(k * CHUNK, (k + 1) * CHUNK)
        topologies: list[str] = list(dict.fromkeys(t for r in records if isinstance(t := r.get("topology"), str)))
        known = self._prompts.setdefault(rid, {})
        missing = [t for t in topologies if t not in known]
        if missing:
            found = system_prompts(_read(self.runs[rid] / RUN_JSON), missing)
            known.update({t: found.get(t) for t in missing})
        return {"records": records, "system_prompts": {t: known[t] for t in topologies if known[t]}}


def system_prompts(run: dict[str, Any], topologies: list[str]) -> dict[str, str]:
    """topology -> the system prompt its episodes were run with, rebuilt from run.json's protocol (an
    episode record leaves it out: it is the same for every episode of a topology). A topology whose
    suite is not installed here gets none."""
    out: dict[str, str] = {}
    try:
        from topoeval.protocol.discovery import SuiteRegistry
        from topoeval.protocol.schema import Protocol
        from topoeval.protocol.topology import resolve

        protocol = Protocol.model_validate(run["protocol"])
        registry = SuiteRegistry(())
        specs = {t.name: t for t in protocol.topologies()}
    except Exception:  # an old or foreign run.json: the page shows no system prompt
        return out
    for name in dict.fromkeys(topologies):
        if name in specs:
            try:
                out[name] = resolve(specs[name], registry).system_prompt()
            except Exception:  # e.g. a bridged suite whose extra is not installed
                continue
    return out
