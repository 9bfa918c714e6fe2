"""The ``topoeval`` command line (typer). User errors end in one line and exit code 2."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from topoeval.commands.export_for import Trainer, export_for
from topoeval.commands.help_format import plain_flags
from topoeval.commands.spellings import check_spellings
from topoeval.core.choices import Executor, ExportFormat, Split, ToolMode
from topoeval.core.errors import ProtocolErrors, UserError
from topoeval.core.secrets import mask_secrets
from topoeval.protocol.schema import MAX_SAMPLES, MAX_TASKS

plain_flags()  # `--help`, not `--help <bool>`, under every supported typer
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure how an agent trained on one tool topology generalises to another.",
)

#: `topoeval run`'s exit code when episodes are left in error (docs/cli.md lists every exit code).
EXIT_EPISODE_ERRORS = 3

SuitesDir = Annotated[
    list[Path] | None, typer.Option("--suites-dir", help="Extra folder(s) of suites (each a folder with suite.yaml).")
]


def _console():
    """A rich console; wide when writing to a pipe or file so tables are not truncated."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


@app.command()
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
    console = _console()
    console.print(
        f"run folder: {result.run_dir}  ({result.new_episodes} new episodes, {result.reused_episodes} resumed"
        + (f", {result.errors} with errors" if result.errors else "") + ")"
    )
    print_success_table(result.summary, console)
    from topoeval.report.matrix import print_matrix_table

    print_matrix_table(result.summary.get("matrix"), console)
    if "partial" in result.summary:
        part = result.summary["partial"]
        console.print(f"shard {part['shard']}: {part['episodes']} of its {part['planned']} planned episodes are in "
                      f"{result.run_dir} (the run plans {part['planned_total']}); when every shard is done: "
                      f"topoeval merge {result.run_dir}")
    if result.errors:
        typer.echo(f"{result.errors} episode(s) ended in error (the backend failed, not the model): left out of the "
                   "scores, their cells marked incomplete; run the same command again to retry them", err=True)
        raise typer.Exit(EXIT_EPISODE_ERRORS)


@app.command()
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
    console = _console()
    console.print(f"merged {len(run_dirs)} folder(s) into {result.run_dir}: {len(result.summary['cells'])} cells, "
                  f"{result.reused_episodes} episodes" + (f", {result.errors} with errors" if result.errors else ""))
    print_success_table(result.summary, console)


from topoeval.commands.validate import validate  # noqa: E402

app.command("validate")(validate)


@app.command()
def suites(suites_dir: SuitesDir = None) -> None:
    """List suites with their tools and topology descriptors."""
    from rich.markup import escape
    from rich.table import Table

    from topoeval.protocol.discovery import SuiteRegistry

    registry = SuiteRegistry(suites_dir or ())
    table = Table("suite", "tools", "state", "reversibility", "user", "ordering", "dependency", "answer",
                  "instructions")
    for name in registry.names():
        s = registry.get(name)
        t = s.manifest.topology
        tools = ", ".join(f"{x.name}[{x.effect.value[0]}]" for x in s.tools)
        if len(s.tools) > 12:  # a bridged world with many tools: counts per effect
            counts = {e: sum(1 for x in s.tools if x.effect.value == e) for e in ("read", "write", "irreversible")}
            tools = f"{len(s.tools)} tools: " + ", ".join(f"{n} [{e[0]}]" for e, n in counts.items())
        table.add_row(name, escape(tools) or "(none: see its description)", t.state, t.reversibility, t.user,
                      t.ordering, t.dependency, t.answer_channel, t.instructions)
    _console().print(table)
    _console().print("[dim]tool effects: \\[r]ead, \\[w]rite, \\[i]rreversible[/dim]")


@app.command()
def protocols() -> None:
    """List the shipped protocols (one that needs an extra not installed is listed with its install command)."""
    import yaml
    from rich.markup import escape
    from rich.table import Table

    from topoeval.protocol.discovery import protocol_names, resolve_protocol_path
    from topoeval.protocol.loader import load_protocol

    table = Table("protocol", "train", "test (role)", "description")
    for name in protocol_names():
        try:
            p = load_protocol(name)
        except UserError as exc:  # e.g. a bridged world whose extra is missing: the file as written, and why
            raw = yaml.safe_load(resolve_protocol_path(name).read_text(encoding="utf-8")) or {}
            tests = ", ".join(f"{t.get('name')} ({t.get('role')})" for t in raw.get("test") or []) or ", ".join(
                str(t.get("name")) for t in (raw.get("matrix") or {}).get("topologies") or [])
            reason = str(exc).splitlines()[0].split(": ", 1)[-1]
            table.add_row(name, (raw.get("train") or {}).get("name", ""), tests,
                          f"[yellow]not available here: {escape(reason)}[/yellow]\n"
                          f"{escape(raw.get('description', ''))}")
            continue
        if p.matrix is not None:  # a transfer matrix: every model on every topology, no single train one
            table.add_row(name, "(matrix)", ", ".join(t.name for t in p.matrix.topologies), p.description)
            continue
        tests = ", ".join(f"{t.name} ({t.role})" for t in p.test)
        table.add_row(name, p.train.name if p.train else "", tests, p.description)
    _console().print(table)


@app.command()
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
    console = _console()
    print_success_table(summary, console)
    print_quality_table(summary, console)
    with lock_run(run_dir, "report"):  # not while a run writes the folder
        written = write_run_reports(summary, read_episodes(run_dir), run_dir)
    console.print("wrote " + ", ".join(p.name for p in written))


@app.command()
def compare(run_dirs: Annotated[list[Path], typer.Argument(help="Run folders of the same protocol.")]) -> None:
    """Put several runs of one protocol side by side (success per topology, ties marked; a matrix's runs: their
    matrix, one row per model and run)."""
    from topoeval.api import compare_runs
    from topoeval.report.matrix import print_matrix_table
    from topoeval.report.tables import print_success_table

    compared = compare_runs(run_dirs)
    console = _console()
    print_success_table(compared, console)
    print_matrix_table(compared.get("matrix"), console)
    for note in compared["notes"]:
        console.print(f"note: {note}")


@app.command()
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
            _console().print(f"[red]bar not checked on {target.name}:[/red] {exc}")
            missed = True
            continue
        violations = bar_violations(matrix)
        print_sensitivity(matrix, violations, _console())
        missed = missed or bool(violations)
    if missed:
        raise typer.Exit(1)


@app.command()
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


from topoeval.commands.models import models  # noqa: E402
from topoeval.commands.sweep import sweep  # noqa: E402
from topoeval.commands.train import train  # noqa: E402
from topoeval.commands.user_agreement import user_agreement  # noqa: E402
from topoeval.commands.view import view  # noqa: E402

app.command("train")(train)
app.command("sweep")(sweep)
app.command("models")(models)
app.command("view")(view)
app.command("user-agreement")(user_agreement)


@app.command("serve-openenv")
def serve_openenv(
    protocol: Annotated[str, typer.Argument(help="Default protocol of a reset (or a suite name).")] = "wiki_to_travel",
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    topology: Annotated[str | None, typer.Option(help="Default topology (default: the protocol's train "
                                                      "topology).")] = None,
    split: Annotated[Split, typer.Option(help="Default split of a reset.")] = Split.train,
    metric: Annotated[str, typer.Option(help="Default reward metric (success, dq, ...).")] = "success",
    max_sessions: Annotated[int, typer.Option(min=1, help="Concurrent WebSocket sessions.")] = 64,
    suites_dir: SuitesDir = None,
    other_protocol: Annotated[list[str] | None, typer.Option("--allow-protocol", help=(
        "Another protocol a client's reset may name (repeatable); a reset naming any other is refused.")),
    ] = None,
) -> None:
    """Serve any topology as an OpenEnv environment (needs the 'openenv' extra; see docs/training.md)."""
    from topoeval.integrations.openenv import serve

    typer.echo(f"OpenEnv server on http://{host}:{port} (WebSocket /ws, /schema, /health); Ctrl-C stops it", err=True)
    serve(host=host, port=port, protocol=protocol, topology=topology, split=split.value, metric=metric,
          max_sessions=max_sessions, suites_dirs=tuple(str(d) for d in suites_dir or ()),
          protocols=tuple(other_protocol or ()))


@app.command("serve-model")
def serve_model(
    model: Annotated[str, typer.Argument(help="smollm2-135m (the embedded model) or a GGUF path.")] = "smollm2-135m",
    adapter: Annotated[list[str] | None, typer.Option(help="A LoRA adapter: smollm2-135m-wiki or a GGUF path "
                                                           "(repeatable).")] = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port on 127.0.0.1.")] = 8080,
    slots: Annotated[int, typer.Option(min=1, help="Sequences decoded together (continuous batching).")] = 4,
    n_ctx: Annotated[int, typer.Option(min=256, help="Context window of each slot.")] = 8192,
    threads: Annotated[int | None, typer.Option(min=1, help="CPU threads (default: all cores).")] = None,
    api_key: Annotated[str | None, typer.Option(envvar="TOPOEVAL_SERVE_API_KEY", help=(
        "The key clients must send (Authorization: Bearer KEY); default: a random one, printed.")),
    ] = None,
) -> None:
    """Serve a local GGUF model with the llama-server topoeval runs (OpenAI-compatible /v1, per-request
    LoRA adapters and grammars; requests need its API key); Ctrl-C stops it. See docs/models.md."""
    from topoeval.models.serve_model import serve

    serve(model, adapter or [], port, slots, n_ctx, threads, echo=lambda line: typer.echo(line, err=True),
          api_key=api_key)


@app.command("serve-mcp")
def serve_mcp(
    target: Annotated[str, typer.Argument(help="A suite name, or a protocol (name or YAML path).")],
    topology: Annotated[str | None, typer.Option(help="The protocol's topology (default: its train topology).")] = None,
    split: Annotated[Split, typer.Option(help="The task's split.")] = Split.test,
    index: Annotated[int | None, typer.Option(min=0, help="Task index in the split (default 0).")] = None,
    task_id: Annotated[str | None, typer.Option(help="The task's id, e.g. travel/test/3-1a2b3c4d (instead of "
                                                     "--index).")] = None,
    suites_dir: SuitesDir = None,
) -> None:
    """Serve one task of a topology as a stdio MCP server: its tools with MCP annotations (topoeval's in
    _meta), the task and its scores as resources (needs the 'mcp' extra; see docs/suites-mcp.md)."""
    from topoeval.integrations.mcp_server import serve

    if index is not None and task_id is not None:
        raise UserError("give --index or --task-id, not both")
    serve(target, topology=topology, split=split.value, index=index, task_id=task_id,
          suites_dirs=tuple(str(d) for d in suites_dir or ()))


@app.command()
def publish(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders to publish.")],
    repo: Annotated[str, typer.Option(help="Hub dataset repo, ORG/NAME.")],
    private: Annotated[bool, typer.Option(help="Make the repo private (an existing public one too).")] = False,
    dry_run: Annotated[bool, typer.Option(help="Write the folder that would be uploaded (into --out) "
                                               "instead.")] = False,
    out: Annotated[Path | None, typer.Option(help="With --dry-run: the folder to write.")] = None,
    offline: Annotated[bool, typer.Option(help="With --dry-run: do not read the repo's current results.")] = False,
    endpoint: Annotated[str | None, typer.Option(help="Hub endpoint (default: huggingface_hub's, "
                                                      "HF_ENDPOINT).")] = None,
    episodes: Annotated[bool, typer.Option(help="Include the per-episode config.")] = True,
) -> None:
    """Publish runs as a Hub dataset (results + latest + episodes + card), merging with the repo's rows."""
    from topoeval.publish import publish as do_publish

    if dry_run and out is None:  # `--dry-run DIR` (its old spelling) leaves DIR among the run folders
        last = run_dirs[-1] if len(run_dirs) > 1 and not (run_dirs[-1] / "run.json").exists() else "DIR"
        raise UserError(f"--dry-run is a flag; the folder it writes is --out (did you mean --dry-run --out {last}?)")
    if (offline or out is not None) and not dry_run:
        raise UserError("--out and --offline only go with --dry-run (an upload needs the Hub)")
    done = do_publish([str(d) for d in run_dirs], repo, private=private, dry_run=out, offline=offline,
                      endpoint=endpoint, episodes=episodes)
    where = f"wrote {done['folder']}" if not done["uploaded"] else f"uploaded to {repo} (commit {done['commit']})"
    typer.echo(f"{where}: {len(done['files'])} files, merged with {done['merged_rows']} existing result rows")


def _terminate(signum, frame) -> None:
    """SIGTERM ends a run like Ctrl-C: finished episodes stay on disk, servers are stopped."""
    raise KeyboardInterrupt


def main() -> None:
    """Entry point: one-line errors for user mistakes, resumable message on Ctrl-C or SIGTERM."""
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    warnings.showwarning = _show_warning
    try:
        check_spellings(sys.argv[1:])
        rc = app(standalone_mode=False)
        if rc == 130:  # typer turns KeyboardInterrupt into exit code 130
            _interrupted()
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except ProtocolErrors as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        sys.exit(exc.exit_code)
    except UserError as exc:
        print(f"error: {mask_secrets(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _interrupted()
    except _click_exception() as exc:  # usage errors (unknown option, missing argument, bad value)
        exc.show()  # typer's usage line, its --help hint, then "Error: <message>"
        sys.exit(exc.exit_code)


_PYTHON_SHOWWARNING = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """topoeval's own warnings as one line (``warning: ...``), without Python's source line."""
    if category.__module__.startswith("topoeval."):
        print(f"warning: {message}", file=file or sys.stderr)
    else:
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


def _click_exception() -> type[Any]:
    """The click exception class behind typer's public ``BadParameter`` (typer >= 0.22 runs on its
    own copy of click, older typer on click itself): found from that public class, not by module."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _interrupted() -> None:
    print("interrupted: finished episodes are saved; run the same command again to resume", file=sys.stderr)
    sys.exit(130)
