"""``topoeval report`` and ``topoeval compare``: a run's tables and report files, runs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topoeval.commands.common import rich_console


def report(run_dir: Annotated[Path, typer.Argument(help="A run folder (holds summary.json).")]) -> None:
    """Print success ± std, dq and each dimension, ID against OOD; rewrite report.md, plots and report.html."""
    from topoeval.analysis.diagnostics import no_tool_call_notice
    from topoeval.report.files import write_run_reports
    from topoeval.report.tables import print_collapse_table, print_quality_table, print_success_table
    from topoeval.runner.lock import lock_run
    from topoeval.runner.store import read_episodes, read_json

    if not (run_dir / "summary.json").is_file():  # a training run: its record's diagnostics (docs/training.md)
        from topoeval.commands.train import report_training

        return report_training(run_dir)
    summary = read_json(run_dir / "summary.json")
    console = rich_console()
    print_success_table(summary, console)
    print_quality_table(summary, console)
    print_collapse_table(summary, console)
    if notice := no_tool_call_notice(summary.get("cells") or []):
        typer.echo(f"warning: {notice}", err=True)
    with lock_run(run_dir, "report"):  # not while a run writes the folder
        written = write_run_reports(summary, read_episodes(run_dir), run_dir)
    console.print("wrote " + ", ".join(p.name for p in written))


def compare(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders of the same protocol.")],
    models: Annotated[tuple[str, str] | None, typer.Option(
        "--models", help="Two models A B: within one run, or A of the first run and B of the second.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the paired comparison as JSON (topoeval.compare/1) instead of the tables.")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Also write the paired comparison to this JSON file (e.g. compare.json).")] = None,
) -> None:
    """Put several runs of one protocol side by side (success per topology, ties marked; a matrix's runs: their
    matrix, one row per model and run). Two runs, or one run with --models A B, also get the paired comparison
    per cell: the tasks that flipped 0 → 1 and 1 → 0, McNemar's exact p, paired CIs of success and dq, and the
    verdict (docs/collapse-report.md#paired-comparison)."""
    from topoeval.analysis.paired_runs import paired_runs
    from topoeval.api import compare_runs
    from topoeval.core.errors import UserError
    from topoeval.report.matrix import print_matrix_table
    from topoeval.report.paired import print_paired
    from topoeval.report.tables import print_success_table

    asked = models is not None or as_json or out is not None  # a paired comparison that cannot be made is refused
    if asked and not (len(run_dirs) == 2 or (models is not None and len(run_dirs) == 1)):
        raise UserError(f"the paired comparison (--models, --json, --out) reads two runs, or one run with --models "
                        f"A B, not {len(run_dirs)} run(s)")
    paired, why_not = None, None
    if asked:
        paired = paired_runs(run_dirs, models)
    elif len(run_dirs) == 2:  # two runs: their paired comparison too, where it can be made (else a note)
        try:
            paired = paired_runs(run_dirs)
        except UserError as exc:
            why_not = str(exc)
    compared = compare_runs(run_dirs)
    if paired is not None and out is not None:
        from topoeval.core.files import write_json_atomic

        write_json_atomic(out, paired.dump(), indent=1)
    if as_json and paired is not None:
        import json

        typer.echo(json.dumps(paired.dump(), indent=1, ensure_ascii=False))
        return
    console = rich_console()
    print_success_table(compared, console)
    print_matrix_table(compared.get("matrix"), console)
    for note in compared["notes"]:
        console.print(f"note: {note}")
    if why_not is not None:
        console.print(f"note: no paired comparison: {why_not}")
    if paired is not None:
        for comparison in paired.comparisons:
            print_paired(comparison, console)
        console.print(f"verdict rule: {paired.rule}")
        if out is not None:
            console.print(f"wrote {out}")
