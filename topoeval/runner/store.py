"""The run folder on disk: ``run.json`` and the append-only ``episodes.jsonl``.

Each episode is one JSON line written (and flushed) as soon as it ends, so a run killed at
any moment keeps every finished episode. A line cut short by a kill is dropped on the next
open and its episode simply runs again.

An episode that ended in ``error`` (the backend or the world failed, not the model) is not
finished: the next run of the same command runs it again and appends the new record. The latest
line of a key is its record; earlier ones stay in the file as history.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError

EPISODES = "episodes.jsonl"
RUN_JSON = "run.json"
#: the file shard i of n appends to (``--shard i/n``, see :mod:`topoeval.runner.shards`)
SHARD_EPISODES = re.compile(r"^episodes\.shard-(\d+)-of-(\d+)\.jsonl$")


class EpisodeStore:
    """Episodes of one run folder, keyed by episode key."""

    def __init__(self, run_dir: Path, name: str = EPISODES):
        self.path = run_dir / name
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
                good.append(line)
                self.records[key] = rec  # the latest line of a key wins
        if damaged:  # rewrite without the torn line so the file stays valid JSONL
            tmp = self.path.with_suffix(".jsonl.tmp")
            tmp.write_text("".join(good), encoding="utf-8")
            os.replace(tmp, self.path)

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def finished(self, key: str) -> bool:
        """Whether ``key`` has a record that a re-run keeps (any status but ``error``)."""
        return key in self.records and is_finished(self.records[key])

    def append(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()
        self.records[record["key"]] = record

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


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
    """The latest complete record of each key in one episode file (torn lines skipped)."""
    out: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
                out[rec["key"]] = rec
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return out


def read_episodes(run_dir: str | Path) -> list[dict[str, Any]]:
    """The latest record of each episode of a run folder (torn lines skipped)."""
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
    """Atomic write: a crash never leaves half a file (the scratch name is per process: shards of
    one run write run.json side by side)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
