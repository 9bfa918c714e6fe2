"""``topoeval user-agreement RUN_DIR --user-model M``: the run's questions read by the deterministic user
and by an LLM user, their agreement per slot (:mod:`topoeval.analysis.user_agreement`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topoeval.commands.common import SuitesDir


def user_agreement(
    run_dir: Annotated[Path, typer.Argument(help="A run folder of `topoeval run`.")],
    user_model: Annotated[str, typer.Option(
        help="The model to compare with the deterministic user (litellm or direct:NAME).")],
    api_base: Annotated[list[str] | None, typer.Option(help="OpenAI-compatible server URL for the user model.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (default: the provider's env variable).")] = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds.")] = 120.0,
    protocol: Annotated[str | None, typer.Option(
        help="The protocol the run was made with (a shipped name or a YAML file); default: the shipped "
             "protocol of the name run.json records. A folder whose run.json records another is refused: "
             "nothing a folder names is loaded.")] = None,
    suites_dir: SuitesDir = None,
) -> None:
    """Replay a run's ask_user questions through the deterministic user and an LLM user; agreement per slot
    (written to RUN_DIR/user_agreement.json)."""
    from topoeval.analysis.user_agreement import user_agreement as measure
    from topoeval.models.options import ModelOptions

    options = ModelOptions(api_bases=api_base or [], api_key=api_key, timeout_s=timeout)
    out = measure(run_dir, user_model, options, protocol=protocol, suites_dirs=suites_dir or ())
    typer.echo(f"{out['n_questions']} questions; read identically: "
               + ("—" if out["exact"] is None else f"{out['exact']:.2f}")
               + (f"; {out['skipped_episodes']} episodes skipped (no readable user)"
                  if out["skipped_episodes"] else ""))
    typer.echo(f"{'slot':10} {'reference':>9} {'user model':>10} {'both':>5} {'agreement':>9}")
    for slot, row in out["slots"].items():
        agree = "—" if row["agreement"] is None else f"{row['agreement']:.2f}"
        typer.echo(f"{slot:10} {row['reference']:9d} {row['user_model']:10d} {row['both']:5d} {agree:>9}")
    typer.echo(f"wrote {Path(run_dir) / 'user_agreement.json'}")
