"""``topoeval sensitivity``: the metrics' own test, the reference policies on every suite or topology."""

from __future__ import annotations

from typing import Annotated

import typer

from topoeval.commands.common import SuitesDir, rich_console
from topoeval.core.errors import UserError
from topoeval.protocol.schema import MAX_TASKS


def sensitivity(
    protocol: Annotated[str | None, typer.Argument(
        help="Check each test topology and ladder step of this protocol (its test seed and limits: the zero-shot "
             "cells) instead of suites.")] = None,
    suite: Annotated[list[str] | None, typer.Option("--suite", help="Suite(s), each checked alone (default: "
                                                                    "all).")] = None,
    tasks: Annotated[int, typer.Option(min=1, max=MAX_TASKS, help="Tasks per suite or topology.")] = 100,
    seed: Annotated[int, typer.Option(help="Task seed (suites; a protocol uses its own).")] = 0,
    suites_dir: SuitesDir = None,
) -> None:
    """Run the reference policies and print the metrics' sensitivity matrix of every suite (or protocol
    test topology) alone; exit 1 if any misses the bar."""
    from topoeval.analysis.sensitivity import bar_violations, protocol_targets, suite_target
    from topoeval.api import sensitivity_matrix
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.report.tables import print_sensitivity

    registry = SuiteRegistry(suites_dir or ())
    if protocol is not None:
        if suite:
            raise UserError("give a PROTOCOL or --suite, not both")
        from topoeval.protocol.loader import load_protocol

        targets = protocol_targets(load_protocol(protocol, registry), registry)
    else:
        names = suite or [n for n in registry.names() if "tool_suites" in (registry.get(n).folder or "")]
        targets = [suite_target(n, registry, seed) for n in names]
    missed = False
    for target in targets:
        try:
            matrix = sensitivity_matrix(target, tasks)
        except UserError as exc:  # e.g. a bridged suite with a fixed task set smaller than --tasks
            rich_console().print(f"[red]bar not checked on {target.name}:[/red] {exc}")
            missed = True
            continue
        violations = bar_violations(matrix)
        print_sensitivity(matrix, violations, rich_console())
        missed = missed or bool(violations)
    if missed:
        raise typer.Exit(1)
