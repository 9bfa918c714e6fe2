"""``topoeval run`` and ``topoeval merge``: evaluate models on a protocol, join a run's shards (docs/cli-run.md)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer

from topoeval.commands.common import SuitesDir, rich_console
from topoeval.core.choices import Executor, ToolMode
from topoeval.core.errors import UserError
from topoeval.protocol.schema import MAX_SAMPLES, MAX_TASKS

#: `topoeval run`'s exit code when episodes are left in error (docs/cli.md lists every exit code).
EXIT_EPISODE_ERRORS = 3


def run(
    protocol: Annotated[str, typer.Argument(help="Protocol name under protocols/ or a path to a YAML file.")],
    model: Annotated[list[str], typer.Option("--model", "-m", help="Model to evaluate (repeatable).")],
    out: Annotated[Path | None, typer.Option(help="Run folder (default results/<protocol>/<run-id>).")] = None,
    tasks: Annotated[int | None, typer.Option(min=1, max=MAX_TASKS, help="Override the test task count per "
                                                                          "topology.")] = None,
    samples: Annotated[int | None, typer.Option(min=1, max=MAX_SAMPLES, help="Override samples per task.")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Concurrent episodes per model.")] = None,
    shots: Annotated[str | None, typer.Option(help="Only these baselines, e.g. '0,1'.")] = None,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Override the protocol's turn limit.")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Override the protocol's tokens per turn.")] = None,
    topology: Annotated[list[str] | None, typer.Option(
        "--topology", help="Only this topology of a matrix protocol (repeatable).")] = None,
    api_base: Annotated[list[str] | None, typer.Option(
        help="OpenAI-compatible server URL (vLLM, llama.cpp, ...); repeat it (or comma-separate) for "
             "replicas.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (default: the provider's env variable).")] = None,
    tool_mode: Annotated[ToolMode, typer.Option(help="How tools reach the model (auto: by the backend's "
                                                     "capability).")] = ToolMode.auto,
    tool_format: Annotated[str | None, typer.Option(help=(
        "Tool-call format: native, hermes, search-r1, react, json or a plug-in's (default: the backend's own); "
        "MODEL@FORMAT sets it per model."))] = None,
    temperature: Annotated[float | None, typer.Option(help="Override the protocol's temperature.")] = None,
    top_p: Annotated[float | None, typer.Option(help="Override the protocol's top_p.")] = None,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds.")] = 120.0,
    max_retries: Annotated[int, typer.Option(
        min=0, help="Retries of 429/5xx/timeouts before an episode is recorded as an error (400/401/403/404: "
                    "none).")] = 6,
    cache: Annotated[bool, typer.Option(help="Cache model responses in the run folder.")] = True,
    suites_dir: SuitesDir = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    trained_on: Annotated[list[Path] | None, typer.Option(
        help="A `topoeval export` folder the model was trained on (repeatable): warns if evaluated tasks are in "
             "it; or MODEL=TOPOLOGY: the matrix topology MODEL was trained on (its row's diagonal; default: its "
             "adapter's training record).")] = None,
    shard: Annotated[str | None, typer.Option(
        help="Run only shard i/n of the episodes (e.g. 2/4), into episodes.shard-i-of-n.jsonl; then `topoeval "
             "merge`.")] = None,
    workers: Annotated[int | None, typer.Option(
        min=0, help="Run the episodes in K local processes (0: one per core), merged at the end. Not given: 1, or for "
                    "direct: models at --concurrency >= 128 one per 128 concurrent episodes, sharing it.")] = None,
    executor: Annotated[Executor, typer.Option(
        help="With ray, shards run as Ray tasks (RAY_ADDRESS, else a local Ray); needs "
             "topoeval[ray].")] = Executor.local,
    user_model: Annotated[str | None, typer.Option(
        help="A model that plays the simulated user from the hidden slots (default: the deterministic user).")] = None,
) -> None:
    """Run models on a protocol; re-running the same command resumes an interrupted run."""
    from topoeval.api import BackendWarning, ContaminationWarning, RunConfig, run_protocol
    from topoeval.models.options import ModelOptions
    from topoeval.report.tables import print_success_table

    models = [m for spec in model for m in spec.replace(",", " ").split()]
    try:
        shot_list = [int(s) for s in shots.replace(",", " ").split()] if shots else None
    except ValueError:
        raise UserError(f"--shots takes numbers like '0,1', not '{shots}'") from None
    from topoeval.policies.suggest import check_model_names

    check_model_names(models, bool(api_base))
    for entry in trained_on or []:
        if "=" not in str(entry) and not entry.exists():
            raise UserError(f"--trained-on {entry}: no such folder; give a `topoeval export` folder the model was "
                            f"trained on, or MODEL=TOPOLOGY for a transfer matrix's diagonal (e.g. --trained-on "
                            f"{models[0] if models else 'MODEL'}={entry})")
    options = ModelOptions(api_bases=api_base or [], api_key=api_key, tool_mode=tool_mode.value, timeout_s=timeout,
                           max_retries=max_retries, tool_format=tool_format)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ContaminationWarning)
        warnings.simplefilter("always", BackendWarning)
        config = RunConfig.build(
            protocol, models, out, tasks=tasks, samples=samples, concurrency=concurrency, suites_dirs=suites_dir or [],
            progress=progress and sys.stderr.isatty(), shots=shot_list, temperature=temperature, top_p=top_p,
            model_options=options, cache=cache, max_turns=max_turns, max_tokens=max_tokens, trained_on=trained_on or [],
            shard=shard, workers=workers, executor=executor, user_model=user_model, topologies=topology,
        )
        result = run_protocol(config)
    for w in caught:
        typer.echo(f"warning: {w.message}", err=True)
    console = rich_console()
    console.print(
        f"run folder: {result.run_dir}  ({result.new_episodes} new episodes, {result.reused_episodes} resumed"
        + (f", {result.errors} with errors" if result.errors else "") + ")"
    )
    print_success_table(result.summary, console)
    from topoeval.report.matrix import print_matrix_table

    print_matrix_table(result.summary.get("matrix"), console)
    from topoeval.report.tables import print_collapse_table

    print_collapse_table(result.summary, console)
    from topoeval.analysis.diagnostics import no_tool_call_notice

    notice = no_tool_call_notice(result.summary.get("cells") or [])
    if notice:
        typer.echo(f"warning: {notice}", err=True)
    if "partial" in result.summary:
        part = result.summary["partial"]
        console.print(f"shard {part['shard']}: {part['episodes']} of its {part['planned']} planned episodes are in "
                      f"{result.run_dir} (the run plans {part['planned_total']}); when every shard is done: "
                      f"topoeval merge {result.run_dir}")
    if result.errors:
        typer.echo(f"{result.errors} episode(s) ended in error (the backend failed, not the model): left out of the "
                   "scores, their cells marked incomplete; run the same command again to retry them", err=True)
        raise typer.Exit(EXIT_EPISODE_ERRORS)


def merge(
    run_dirs: Annotated[list[Path], typer.Argument(help="The run folder(s) of one run's shards.")],
    out: Annotated[Path | None, typer.Option(help="Write the merged run here (default: the one folder given).")] = None,
) -> None:
    """Merge a run's shards: the summary.json, reports and plots of the whole run (exit 1, listing them,
    if planned episodes are missing)."""
    from topoeval.api import MissingEpisodes, merge_runs
    from topoeval.report.tables import print_success_table

    try:
        result = merge_runs(run_dirs, out)
    except MissingEpisodes as exc:
        typer.echo(f"error: {exc}", err=True)
        for key in exc.missing[:20]:
            typer.echo(f"  missing: {key}", err=True)
        if len(exc.missing) > 20:
            typer.echo(f"  ... and {len(exc.missing) - 20} more", err=True)
        raise typer.Exit(exc.exit_code) from None
    console = rich_console()
    console.print(f"merged {len(run_dirs)} folder(s) into {result.run_dir}: {len(result.summary['cells'])} cells, "
                  f"{result.reused_episodes} episodes" + (f", {result.errors} with errors" if result.errors else ""))
    print_success_table(result.summary, console)
    from topoeval.analysis.diagnostics import no_tool_call_notice

    notice = no_tool_call_notice(result.summary.get("cells") or [])
    if notice:
        typer.echo(f"warning: {notice}", err=True)
