"""The run folder on disk: ``run.json`` and the append-only ``episodes.jsonl``.

Each episode is one JSON line written (and flushed) as soon as it ends, so a run killed at
any moment keeps every finished episode. A line cut short by a kill is dropped on the next
open and its episode simply runs again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError

EPISODES = "episodes.jsonl"
RUN_JSON = "run.json"


class EpisodeStore:
    """Episodes of one run folder, keyed by episode key."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / EPISODES
        self.records: dict[str, dict[str, Any]] = {}
        run_dir.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self._load()
        self._fh = open(self.path, "a", encoding="utf-8")

    def _load(self) -> None:
        good: list[str] = []
        damaged = False
        with open(self.path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                    key = rec["key"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    damaged = True
                    continue
                if not line.endswith("\n"):
                    line += "\n"
                if key not in self.records:
                    good.append(line)
                self.records[key] = rec
        if damaged:  # rewrite without the torn line so the file stays valid JSONL
            tmp = self.path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(good), encoding="utf-8")
            os.replace(tmp, self.path)

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def append(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()
        self.records[record["key"]] = record

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


def read_episodes(run_dir: str | Path) -> list[dict[str, Any]]:
    """All complete episode records of a run folder (torn lines skipped)."""
    path = Path(run_dir) / EPISODES
    out: dict[str, dict[str, Any]] = {}
    if path.exists():
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                    out[rec["key"]] = rec
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
    return list(out.values())


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: not found (is this a topoeval run folder?)") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {exc.msg}") from None


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomic write: a crash never leaves half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
