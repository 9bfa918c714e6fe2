"""``topoeval export``: a topology's tasks for RL trainers, or conversations for fine-tuning (docs/cli-train.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topoeval.commands.common import SuitesDir
from topoeval.commands.export_for import Trainer, export_for
from topoeval.core.choices import ExportFormat, Split
from topoeval.core.errors import UserError
from topoeval.protocol.schema import MAX_TASKS


def export(
    protocol: Annotated[str, typer.Argument(help="Protocol file or shipped name, or a suite name.")],
    out: Annotated[Path, typer.Option(help="Output folder (gets <split>.parquet, or sft.parquet, and "
                                           "topoeval_export.json).")],
    split: Annotated[Split, typer.Option(help="The task split to write.")] = Split.train,
    tasks: Annotated[int | None, typer.Option(min=1, max=MAX_TASKS, help="Tasks to write (default: the protocol's "
                                                                          "count for the split).")] = None,
    topology: Annotated[str | None, typer.Option(help="Topology to export (default: the protocol's train "
                                                      "topology).")] = None,
    seed: Annotated[int, typer.Option(help="Task seed when exporting a bare suite.")] = 0,
    format: Annotated[ExportFormat, typer.Option(
        "--format", help="rl: tasks for RL trainers; sft: successful conversations for "
                         "fine-tuning.")] = ExportFormat.rl,
    policy: Annotated[str, typer.Option(
        help="--format sft: the model whose successful episodes on the split are kept ('none': only "
             "--from-run).")] = "oracle",
    from_run: Annotated[list[Path] | None, typer.Option(
        help="--format sft: also keep this run folder's successful episodes (repeatable).")] = None,
    suites_dir: SuitesDir = None,
    for_: Annotated[Trainer | None, typer.Option(
        "--for", help="Write a trainer's datasets: train.parquet (the train topology) and val_<topology>.parquet "
                      "per test topology, rows for topoeval's verl agent loop or SkyRL env "
                      "(docs/verl-skyrl.md).")] = None,
) -> None:
    """Write a topology's tasks as a parquet dataset for RL trainers (verifiers / TRL / verl columns), or
    successful conversations for supervised fine-tuning (--format sft; docs/training.md)."""
    if for_ is not None:
        if split != Split.train:
            raise UserError("--for writes the train split and the test topologies' test splits; it takes no --split")
        return export_for(protocol, out, for_, tasks=tasks, topology=topology, sft=format == ExportFormat.sft,
                          suites_dirs=suites_dir)
    if format == ExportFormat.sft:
        import json

        from topoeval.training.sft_data import SFT_FILE, export_sft

        manifest = export_sft(protocol, out, split=split.value, n=tasks, topology=topology, seed=seed,
                              policy=None if policy == "none" else policy, from_runs=from_run or (),
                              suites_dirs=suites_dir or ())
        typer.echo(f"wrote {Path(out) / SFT_FILE}: {manifest['conversations']} conversations "
                   f"({', '.join(f'{k}: {v}' for k, v in manifest['conversations_by_split'].items())} split); "
                   f"sources {json.dumps(manifest['sources'])}")
        return
    if policy != "oracle" or from_run:
        raise UserError("--policy and --from-run go with --format sft")
    from topoeval.training.export import export_tasks

    path = export_tasks(protocol, out, split=split.value, n=tasks, topology=topology, seed=seed,
                        suites_dirs=suites_dir or ())
    typer.echo(f"wrote {path}")
