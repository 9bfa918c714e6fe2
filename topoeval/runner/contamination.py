"""Checking an evaluation against what a model was trained on (``--trained-on`` export folders).

``topoeval export`` writes ``MANIFEST`` into its folder with every exported task's fingerprint; a run
counts how many of its evaluated tasks are among them.
"""

from __future__ import annotations

import json
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.core.suite import Task

#: File name of an export folder's manifest (hashes and task fingerprints).
MANIFEST = "topoeval_export.json"


def overlap_with_exports(exports: list[str | Path], task_sets: dict[str, list[Task]]) -> dict[str, int]:
    """For each export folder (or its manifest file), how many evaluated tasks it contains."""
    return overlap_with_fingerprints(exports, {t.fingerprint() for tasks in task_sets.values() for t in tasks})


def overlap_with_fingerprints(exports: list[str | Path], evaluated: set[str]) -> dict[str, int]:
    """For each export folder (or its manifest file), how many of the ``evaluated`` task fingerprints it holds."""
    out = {}
    for e in exports:
        path = Path(e)
        path = path / MANIFEST if path.is_dir() else path
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"trained_on {e}: not a topoeval export ({exc})") from None
        out[str(e)] = len(evaluated & set(manifest.get("fingerprints", [])))
    return out
