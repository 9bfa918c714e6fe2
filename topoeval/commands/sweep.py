"""``topoeval sweep``: evaluate every kept checkpoint of one training run; ID/OOD (and ladder) curves over training.

The checkpoints become adapter models (:mod:`topoeval.training.checkpoints`), all evaluated by
:func:`topoeval.api.run_sweep` in one run folder (``<out>/run``, resumable like any run: the same
command picks up where it stopped), and
the curves (:mod:`topoeval.analysis.sweep`) are written to ``<out>/summary.json``, ``sweep.png``,
``report.md`` and ``report.html`` (:mod:`topoeval.report.sweep`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topoeval.protocol.schema import MAX_TASKS


def sweep(
    training: Annotated[Path, typer.Argument(help="A training record (<name>.json from topoeval train) or the folder "
                                                  "holding it.")],
    protocol: Annotated[str | None, typer.Option(help="Protocol to evaluate on (default: the one it was trained "
                                                      "for).")] = None,
    work_dir: Annotated[Path | None, typer.Option(help="The training's working folder (default: recorded, else "
                                                       "./runs/train/<name>).")] = None,
    every: Annotated[int | None, typer.Option(min=1, help="Only checkpoints at multiples of this step (and the "
                                                          "last).")] = None,
    tasks: Annotated[int | None, typer.Option(min=1, max=MAX_TASKS, help="Test tasks per topology (default: the "
                                                                          "protocol's).")] = None,
    shots: Annotated[int, typer.Option(min=0, help="The baseline evaluated at every checkpoint.")] = 0,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Override the protocol's turn limit.")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Override the protocol's tokens per turn.")] = None,
    out: Annotated[Path | None, typer.Option(help="Sweep folder (default ./results/<protocol>/sweep-<model>).")] = None,
) -> None:
    """Evaluate every kept checkpoint of a training run on the protocol's ID and OOD topologies (and ladder):
    success and dq against the training step with 95 % CIs (summary.json, sweep.png, report.md/html)."""
    from topoeval.api import run_sweep
    from topoeval.training.checkpoints import checkpoint_points, read_record, sweep_training

    record, path = read_record(training)
    protocol = protocol or record["protocol"]
    folder = Path(out or Path("results") / Path(protocol).stem / f"sweep-{record['model']}")
    points = checkpoint_points(record, folder / "adapters", work_dir, every)
    info = sweep_training(record, path, every)
    given = {"tasks": tasks, "max_turns": max_turns, "max_tokens": max_tokens}
    settings = {k: v for k, v in given.items() if v is not None}
    result = run_sweep(protocol, points, folder, training=info, adapters=folder / "adapters", baseline=shots,
                       **settings)
    for p in result["peaks"]:
        typer.echo(f"{p['topology']} ({p['role']}) {p['metric']}: {p['first']:.2f} -> {p['last']:.2f}, "
                   f"peak {p['peak']:.2f} at step {p['peak_step']}")
    typer.echo(f"wrote {folder / 'summary.json'}, {folder / 'report.md'}, {folder / 'sweep.png'}")
