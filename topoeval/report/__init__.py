"""Presentation: terminal tables (``tables``), report.md (``markdown``), report.html (``html``),
PNG plots (``plots``), and writing all of them into a run folder (``files``)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """A name of 0.1.0 that moved: an ImportError naming its new place (topoeval.core.moved)."""
    from topoeval.core.moved import MOVED_NAMES, moved_name

    if (__name__, name) in MOVED_NAMES:
        raise moved_name(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
