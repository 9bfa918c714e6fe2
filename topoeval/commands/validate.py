"""``topoeval validate PROTOCOL... [--oracle]``: check protocol files, and with ``--oracle`` play the
oracle once on every task they evaluate (:mod:`topoeval.runner.oracle_check`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topoeval.core.errors import UserError


def validate(
    files: Annotated[list[Path], typer.Argument(help="Protocol YAML files.")],
    suites_dir: Annotated[list[Path] | None, typer.Option(
        "--suites-dir", help="Extra folder(s) of suites (each a folder with suite.yaml).")] = None,
    oracle: Annotated[bool, typer.Option(
        "--oracle", help="Also play the oracle once on every evaluated task: its plan must run without errors, "
        "succeed, and each expected answer must appear in the observations of the calls that produced it.")] = False,
) -> None:
    """Check protocol files; each problem is one line 'file:line field: message' (exit 2)."""
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.protocol.loader import load_protocol

    registry = SuiteRegistry(suites_dir or ())
    failed = False
    for f in files:
        try:
            protocol = load_protocol(f if f.suffix in (".yaml", ".yml") or f.exists() else str(f), registry)
        except UserError as exc:
            failed = True
            typer.echo(str(exc), err=True)
            continue
        problems: list[str] = []
        if oracle:
            from topoeval.runner.oracle_check import oracle_problems

            problems = oracle_problems(protocol, registry)
        for line in problems:
            typer.echo(f"{f}: {line}", err=True)
        failed |= bool(problems)
        if not problems:
            typer.echo(f"{f}: ok" + (" (the oracle's plan checked on every evaluated task)" if oracle else ""))
    if failed:
        raise typer.Exit(2)
