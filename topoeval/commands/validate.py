"""``topoeval validate PROTOCOL... [--oracle] [--allow-commands]``: check protocol files, and with
``--oracle`` play the oracle once on every task they evaluate (:mod:`topoeval.runner.oracle_check`).

A protocol that is not a shipped one is checked without running anything it names (an MCP server,
fixture or check commands, a module import: :mod:`topoeval.core.commands`); where the check would
need to, validate says so in one line and exits 2. ``--allow-commands`` runs them (the full check).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Annotated

import typer

from topoeval.core.errors import UserError


def validate(
    files: Annotated[list[str], typer.Argument(help="Protocol YAML files (or shipped protocols by name).")],
    suites_dir: Annotated[list[str] | None, typer.Option(
        "--suites-dir", help="Extra folder(s) of suites (each a folder with suite.yaml).")] = None,
    oracle: Annotated[bool, typer.Option(
        "--oracle", help="Also play the oracle once on every evaluated task: its plan must run without errors, "
        "succeed, and each expected answer must appear in the observations of the calls that produced it.")] = False,
    allow_commands: Annotated[bool, typer.Option(
        "--allow-commands", help="Let the check start the servers and run the commands a protocol names (MCP "
        "server commands, fixture and check commands, module imports); without it, nothing a protocol that is "
        "not shipped names is run.")] = False,
) -> None:
    """Check protocol files; each problem is one line 'file:line field: message' (exit 2)."""
    from topoeval.core.commands import commands_refused
    from topoeval.protocol.discovery import SuiteRegistry, is_shipped_protocol, resolve_protocol_path
    from topoeval.protocol.loader import load_protocol

    registry = SuiteRegistry(suites_dir or ())
    failed = False
    for f in files:
        try:
            trusted = allow_commands or is_shipped_protocol(resolve_protocol_path(f))
        except UserError:
            trusted = True  # no such file: load_protocol says so
        refused: list[str] = []
        with nullcontext(refused) if trusted else commands_refused() as refused:
            try:
                protocol = load_protocol(f, registry)
            except UserError as exc:
                failed = True
                typer.echo(str(exc), err=True)
                protocol = None
            problems: list[str] = []
            if oracle and protocol is not None and not refused:
                from topoeval.runner.oracle_check import oracle_problems

                problems = oracle_problems(protocol, registry)
        if refused:
            failed = True
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            typer.echo(f"{f}: not fully checked: it would run {refused[0]}{more}; nothing was run (validate "
                       "--allow-commands runs them; `topoeval run` of a protocol you name runs them too)", err=True)
            continue
        if protocol is None:
            continue
        for line in problems:
            typer.echo(f"{f}: {line}", err=True)
        failed |= bool(problems)
        if not problems:
            typer.echo(f"{f}: ok" + (" (the oracle's plan checked on every evaluated task)" if oracle else ""))
    if failed:
        raise typer.Exit(2)
