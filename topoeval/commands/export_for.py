"""``topoeval export PROTOCOL --for verl|skyrl --out DIR`` (topoeval.integrations.trainer_export)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from topoeval.core.errors import UserError


class Trainer(str, Enum):
    """Trainers whose dataset layout ``--for`` writes."""

    verl = "verl"
    skyrl = "skyrl"


def export_for(protocol: str, out: Path, trainer: Trainer, *, tasks: int | None, topology: str | None,
               sft: bool, suites_dirs: list[Path] | None) -> None:
    """Write train.parquet and one val_<topology>.parquet per test topology for ``trainer``."""
    from topoeval.integrations.trainer_export import export_for_trainer

    if sft or topology is not None:
        raise UserError("--for writes the protocol's train topology and every test topology; it takes no "
                        "--topology or --format sft")
    manifest = export_for_trainer(protocol, out, trainer.value, train_n=tasks, val_n=tasks,
                                  suites_dirs=tuple(str(d) for d in suites_dirs or ()))
    for name, f in manifest["files"].items():
        typer.echo(f"wrote {Path(out) / name}: {f['n']} {f['split']} tasks of {f['topology']}")
