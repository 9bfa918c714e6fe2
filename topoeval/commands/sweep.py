"""``topoeval sweep``: transfer over training — ID/OOD (and ladder) curves against the training step.

Two forms, told apart by the first argument (the decision, so that both keep one command):

- ``topoeval sweep TRAINING_RECORD`` — a ``.json`` file, or a folder holding one, written by
  ``topoeval train``: its kept checkpoints (:mod:`topoeval.training.checkpoints`);
- ``topoeval sweep PROTOCOL ...`` — anything else (a shipped protocol name or a YAML path), with the
  points named: ``--point STEP=MODEL`` (any model spec), ``--points FILE`` (YAML: step → model, or step
  → {model, api_base, name}), and/or ``--checkpoints DIR`` (``checkpoint-<step>/``, ``global_step_<step>/``:
  :mod:`topoeval.training.checkpoint_dirs`), served by topoeval's llama-server (PEFT LoRA of a base
  with a GGUF) or by a server topoeval starts from ``--serve TEMPLATE``; ``--base MODEL`` is step 0.

Either way every point is evaluated by :func:`topoeval.api.run_sweep` in one run folder (``<out>/run``,
resumable: the same command picks up where it stopped), and the curves (:mod:`topoeval.analysis.sweep`)
are written to ``<out>/summary.json``, ``sweep.png``, ``report.md`` and ``report.html``
(:mod:`topoeval.report.sweep`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from topoeval.core.errors import UserError
from topoeval.protocol.schema import MAX_TASKS


def is_training_record_arg(target: str) -> bool:
    """The dispatch rule: a ``.json`` path or an existing folder is a training record; else a protocol."""
    path = Path(target)
    return path.suffix.lower() == ".json" or path.is_dir()


def sweep(
    target: Annotated[str, typer.Argument(metavar="PROTOCOL|TRAINING_RECORD", help=(
        "A protocol (shipped name or YAML path) with --point/--points/--checkpoints; or a training record "
        "(<name>.json from topoeval train, or the folder holding it)."))],
    point: Annotated[list[str] | None, typer.Option(help="STEP=MODEL: one point of the curve, any model spec "
                                                         "(repeatable).")] = None,
    points: Annotated[Path | None, typer.Option(help="YAML: step -> model, or step -> {model, api_base, "
                                                     "name}.")] = None,
    checkpoints: Annotated[Path | None, typer.Option(help="A trainer's output folder: checkpoint-<step>/ (HF, TRL) "
                                                          "and global_step_<step>/ (verl) folders.")] = None,
    serve: Annotated[str | None, typer.Option(help="Server command template for the checkpoints: {path} {port} "
                                                   "{name}, or {lora_modules} for one server of every LoRA "
                                                   "checkpoint; fields bare, not in quotes (each is passed as one "
                                                   "argument).")] = None,
    base: Annotated[str | None, typer.Option(help="Model of step 0 (the policy training started from).")] = None,
    base_gguf: Annotated[Path | None, typer.Option(help="The GGUF of the base the LoRA checkpoints were trained on "
                                                        "(default: the embedded SmolLM2-135M, when it is theirs).")
                         ] = None,
    api_base: Annotated[list[str] | None, typer.Option(help="OpenAI-compatible server for direct:/litellm points "
                                                            "without their own api_base.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key for those servers.")] = None,
    protocol: Annotated[str | None, typer.Option(help="Training record form: protocol to evaluate on (default: the "
                                                      "one it was trained for).")] = None,
    work_dir: Annotated[Path | None, typer.Option(help="Training record form: the training's working folder "
                                                       "(default: recorded, else ./runs/train/<name>).")] = None,
    every: Annotated[int | None, typer.Option(min=1, help="Only checkpoints at multiples of this step (and the "
                                                          "last).")] = None,
    tasks: Annotated[int | None, typer.Option(min=1, max=MAX_TASKS, help="Test tasks per topology (default: the "
                                                                          "protocol's).")] = None,
    shots: Annotated[int, typer.Option(min=0, help="The baseline evaluated at every checkpoint.")] = 0,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Override the protocol's turn limit.")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Override the protocol's tokens per turn.")] = None,
    out: Annotated[Path | None, typer.Option(help="Sweep folder (default ./results/<protocol>/sweep-<name>).")] = None,
) -> None:
    """Transfer over training: success and dq on the protocol's ID and OOD topologies (and ladder) against the
    training step, with 95 % CIs and the curve's shape named (summary.json, sweep.png, report.md/html)."""
    given = {"tasks": tasks, "max_turns": max_turns, "max_tokens": max_tokens}
    settings: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    new = {"--point": point, "--points": points, "--checkpoints": checkpoints, "--serve": serve, "--base": base,
           "--base-gguf": base_gguf, "--api-base": api_base, "--api-key": api_key}
    if is_training_record_arg(target):
        extra = next((k for k, v in new.items() if v), None)
        if extra:
            raise UserError(f"{extra} goes with a protocol (topoeval sweep PROTOCOL {extra} ...); {target} is read as "
                            "a training record")
        return _sweep_training(Path(target), protocol, work_dir, every, shots, out, settings)
    for flag, value in (("--protocol", protocol), ("--work-dir", work_dir)):
        if value is not None:
            raise UserError(f"{flag} goes with a training record; {target} is the protocol here")
    if api_base or api_key:
        settings["model_options"] = {"api_bases": api_base or [], "api_key": api_key}
    _sweep_protocol(target, point or [], points, checkpoints, serve, base, base_gguf, every, shots, out, settings)


def _sweep_training(training: Path, protocol: str | None, work_dir: Path | None, every: int | None, shots: int,
                    out: Path | None, settings: dict[str, Any]) -> None:
    from topoeval.api import run_sweep
    from topoeval.training.checkpoints import checkpoint_points, read_record, sweep_training

    record, path = read_record(training)
    if protocol is None:
        protocol = _recorded_protocol(record, path)
    folder = Path(out or Path("results") / Path(protocol).stem / f"sweep-{record['model']}")
    pts = checkpoint_points(record, folder / "adapters", work_dir, every)
    info = sweep_training(record, path, every)
    result = run_sweep(protocol, pts, folder, training=info, adapters=folder / "adapters", baseline=shots, **settings)
    _echo(result, folder)


def _recorded_protocol(record: dict[str, Any], path: Path) -> str:
    """The protocol a training record names, when it is a shipped one by name: a protocol file a record names
    is never loaded unasked (loading one imports its suites and may run what its topologies name, and a
    training folder may come from anyone); the caller names it with --protocol instead."""
    from topoeval.protocol.discovery import looks_like_path

    named = record.get("protocol")
    if not isinstance(named, str) or not named:
        raise UserError(f"{path}: the training record names no protocol; give --protocol")
    if looks_like_path(named):
        raise UserError(f"{path}: the training record names the protocol file '{named}', which a sweep does not "
                        f"load unasked; if you trust it, give it yourself: --protocol {named}")
    return named


def _sweep_protocol(protocol: str, point: list[str], points_file: Path | None, checkpoints: Path | None,
                    serve: str | None, base: str | None, base_gguf: Path | None, every: int | None, shots: int,
                    out: Path | None, settings: dict[str, Any]) -> None:
    from topoeval.api import run_sweep
    from topoeval.commands.sweep_points import parse_point, read_points

    pts = [parse_point(p) for p in point]
    if points_file is not None:
        pts += read_points(points_file)
    if base is not None:
        from topoeval.analysis.sweep import SweepPoint

        pts.append(SweepPoint(step=0, model=base))
    if serve is not None and checkpoints is None:
        raise UserError("--serve starts a server per checkpoint: it goes with --checkpoints DIR")
    if base_gguf is not None and checkpoints is None:
        raise UserError("--base-gguf is the base of LoRA checkpoints: it goes with --checkpoints DIR")
    if every is not None and checkpoints is None:
        raise UserError("--every picks checkpoints: it goes with --checkpoints DIR")
    name = "points"
    if checkpoints is not None:
        name = checkpoints.resolve().name
    folder = Path(out or Path("results") / Path(protocol).stem / f"sweep-{name}")
    if checkpoints is not None:
        from topoeval.training.checkpoint_dirs import checkpoint_points, find_checkpoints

        if base_gguf is not None and not base_gguf.is_file():
            raise UserError(f"--base-gguf {base_gguf}: no such file")
        found = find_checkpoints(checkpoints, every)
        pts += checkpoint_points(found, folder / "adapters", serve=serve,
                                 base_gguf=str(base_gguf) if base_gguf else None, echo=typer.echo)
    if not pts:
        raise UserError("name the points of the curve: --point STEP=MODEL, --points FILE or --checkpoints DIR")
    steps = [p.step for p in pts]
    twice = next((s for s in steps if steps.count(s) > 1), None)
    if twice is not None:
        raise UserError(f"two points at step {twice} (--base is step 0)")
    training = {"checkpoints": str(checkpoints), "every": every} if checkpoints is not None else None
    result = run_sweep(protocol, pts, folder, training=training, baseline=shots, **settings)
    _echo(result, folder)


def _echo(result: dict[str, Any], folder: Path) -> None:
    for s in result.get("shapes", []):
        typer.echo(s["sentence"])
    for c in result.get("correlations", []):
        typer.echo(c["sentence"])
    typer.echo(f"wrote {folder / 'summary.json'}, {folder / 'report.md'}, {folder / 'sweep.png'}")
