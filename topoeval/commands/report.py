"""``topoeval report`` and ``topoeval compare``: a run's tables and report files, runs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topoeval.commands.common import rich_console


def report(run_dir: Annotated[Path, typer.Argument(help="A run folder (holds summary.json).")]) -> None:
    """Print success ± std, dq and each dimension, ID against OOD; rewrite report.md, plots and report.html."""
    from topoeval.report.files import write_run_reports
    from topoeval.report.tables import print_quality_table, print_success_table
    from topoeval.runner.lock import lock_run
    from topoeval.runner.store import read_episodes, read_json

    if not (run_dir / "summary.json").is_file():  # a training run: its record's diagnostics (docs/training.md)
        from topoeval.commands.train import report_training

        return report_training(run_dir)
    summary = read_json(run_dir / "summary.json")
    console = rich_console()
    print_success_table(summary, console)
    print_quality_table(summary, console)
    with lock_run(run_dir, "report"):  # not while a run writes the folder
        written = write_run_reports(summary, read_episodes(run_dir), run_dir)
    console.print("wrote " + ", ".join(p.name for p in written))


def compare(run_dirs: Annotated[list[Path], typer.Argument(help="Run folders of the same protocol.")]) -> None:
    """Put several runs of one protocol side by side (success per topology, ties marked; a matrix's runs: their
    matrix, one row per model and run)."""
    from topoeval.api import compare_runs
    from topoeval.report.matrix import print_matrix_table
    from topoeval.report.tables import print_success_table

    compared = compare_runs(run_dirs)
    console = rich_console()
    print_success_table(compared, console)
    print_matrix_table(compared.get("matrix"), console)
    for note in compared["notes"]:
        console.print(f"note: {note}")
