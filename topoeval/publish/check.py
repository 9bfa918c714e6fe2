"""What a publish checks before it touches the Hub: every run folder idle, readable and valid.

A run folder may come from anyone. :func:`check_runs` runs before the repo is created, its settings
changed or its rows downloaded: each folder is not being written (:func:`topoeval.runner.lock.check_idle`),
its run.json and summary.json read, and the rows a publish would build from them checked against the
declared schema (:func:`check_rows`), so a crafted or damaged folder is one line and the Hub is never
touched. Records and cells of episodes the run never planned are left out later, when the tables are
built (:mod:`topoeval.publish.tables`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.publish.schema import MATRIX_COLUMNS, MATRIX_DEFAULTS, RESULT_COLUMNS, conform
from topoeval.publish.tables import load_run, matrix_rows, result_rows

#: Python types a value of each scalar column kind may have (None is always allowed)
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "float64": (int, float), "int64": (int,), "bool": (bool,)}


def _fits(value: Any, kind: str) -> bool:
    if value is None:
        return True
    if kind.startswith("list["):
        return isinstance(value, list) and all(_fits(v, kind[5:-1]) for v in value)
    if isinstance(value, bool) and kind != "bool":
        return False
    return isinstance(value, _TYPES[kind])


def check_rows(rows: list[dict[str, Any]], columns: dict[str, str], where: str | Path) -> None:
    """Refuse (one line) rows with a value of the wrong type for its column (what a crafted summary gives)."""
    for row in rows:
        for name, kind in columns.items():
            if not _fits(row.get(name), kind):
                raise UserError(f"{where}: not a run folder topoeval wrote ({name} is {str(row.get(name))[:60]!r}, "
                                f"not a {kind}); nothing was published")


def check_runs(run_dirs: Sequence[str | Path]) -> None:
    """Every folder idle, readable and valid (module docstring); one line for the first that is not."""
    for d in run_dirs:
        load_run(d)  # idle (not being written), run.json and summary.json readable
        try:
            results = conform(result_rows(d, warn=False), RESULT_COLUMNS)
            matrix = conform(matrix_rows(d), MATRIX_COLUMNS, MATRIX_DEFAULTS)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise UserError(f"{d}: its summary.json is not one topoeval wrote ({type(exc).__name__}: "
                            f"{str(exc)[:80]}); nothing was published") from None
        check_rows(results, RESULT_COLUMNS, d)
        check_rows(matrix, MATRIX_COLUMNS, d)
