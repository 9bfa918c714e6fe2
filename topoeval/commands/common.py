"""What the CLI's commands share: the ``--suites-dir`` option and a console for their tables."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

SuitesDir = Annotated[
    list[Path] | None, typer.Option("--suites-dir", help="Extra folder(s) of suites (each a folder with suite.yaml).")
]


def rich_console():
    """A rich console; wide when writing to a pipe or file so tables are not truncated."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)
