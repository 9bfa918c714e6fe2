"""Where a relative path in a protocol's parameters is read from: the protocol file's folder.

A protocol loaded from a file (``load_protocol``) resolves its topologies' parameters inside
:func:`protocol_folder`, so a suite's parameter validator can read :func:`current_protocol_folder`
and look a relative path up there — not in the current directory, which changes with where the
command runs. Outside a protocol file (a suite name, a protocol given as a dict) it is None and the
current directory is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_FOLDER: ContextVar[Path | None] = ContextVar("topoeval_protocol_folder", default=None)


@contextmanager
def protocol_folder(folder: str | Path | None) -> Iterator[None]:
    """Parameters validated inside this block read relative paths from ``folder`` (None: the cwd)."""
    token = _FOLDER.set(Path(folder) if folder is not None else None)
    try:
        yield
    finally:
        _FOLDER.reset(token)


def current_protocol_folder() -> Path | None:
    """The folder of the protocol file whose parameters are being validated, if any."""
    return _FOLDER.get()


def relative_base(folder: Path | None) -> Path:
    """Where a relative parameter path is looked up: the protocol's folder, else the cwd."""
    return folder if folder is not None else Path.cwd()
