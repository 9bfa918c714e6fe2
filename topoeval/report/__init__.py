"""Presentation: terminal tables (``tables``), report.md (``markdown``), report.html (``html``),
PNG plots (``plots``), and writing all of them into a run folder (``files``).

Until 0.1.0 ``topoeval.report`` was the terminal-tables module; its names still resolve here, with a
``DeprecationWarning``, for one release.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import importlib
    import warnings

    tables = importlib.import_module("topoeval.report.tables")
    if not name.startswith("__") and hasattr(tables, name):
        warnings.warn(f"topoeval.report.{name} moved to topoeval.report.tables.{name}", DeprecationWarning, stacklevel=2)
        return getattr(tables, name)
    raise AttributeError(f"module 'topoeval.report' has no attribute {name!r}")
