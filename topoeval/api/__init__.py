"""The Python entry point of a whole run: episodes (runner), then summary (analysis), then reports.

``topoeval.run_protocol`` and ``topoeval run`` both come here. The runner below writes run.json and
episodes.jsonl and returns; this module asks the analysis layer for ``summary.json`` and the report
layer for ``report.md``, the plots and ``report.html``, so the runner never depends on either.
Past one process (docs/scaling.md): one shard of a run (``shard``, a partial summary), K local
worker processes or Ray tasks (``workers``, ``executor``), and :func:`merge_runs`, which turns the
shards' episode files into the summary and reports an unsharded run writes.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from topoeval.analysis.summary import build_summary
from topoeval.analysis.sweep import SweepPoint
from topoeval.core.errors import UserError
from topoeval.core.policy import Policy
from topoeval.protocol.schema import Protocol
from topoeval.report.files import write_run_reports
from topoeval.runner.config import Executor, RunConfig
from topoeval.runner.lock import check_idle, discard_unused, lock_run
from topoeval.runner.prompts import PROMPTS_JSON, write_prompts
from topoeval.runner.run import (
    BackendWarning,
    ContaminationWarning,
    EpisodeRun,
    arun_episodes,
    finish_run,
    loop_factory,
)
from topoeval.runner.shards import (
    MissingEpisodes,
    append_missing,
    combine,
    merge_prompts,
    write_episodes,
    write_plan,
)
from topoeval.runner.store import EPISODES, RUN_JSON, EpisodeStore, finished_keys, write_json

__all__ = ["RunResult", "SweepPoint", "run_sweep",
           "UnknownCell", "RunConfig", "run_protocol", "arun_protocol", "summarise_run", "merge_runs",
           "compare_runs", "compare_paired", "sensitivity_matrix", "ContaminationWarning",
           "BackendWarning", "MissingEpisodes"]


class UnknownCell(UserError, KeyError):
    """:meth:`RunResult.cell` for a (model, topology, baseline) the run has no cell of; its message names
    the run's models, topologies and baselines (and the closest name to a misspelt one)."""

    def __str__(self) -> str:  # KeyError would print the repr of its message
        return str(self.args[0])


class RunResult(BaseModel):
    """What :func:`run_protocol` (and :func:`merge_runs`) return: where the run is and what it found."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_dir: Path = Field(description="The run folder (run.json, plan.json, episodes.jsonl, summary.json, reports).")
    summary: dict[str, Any] = Field(description=(
        "summary.json as written (docs/results.md): ``cells``, ``matrix``, ``collapse``, ``headline``, ``ladder``, "
        "hashes; a "
        "shard's partial summary has ``partial``."))
    new_episodes: int = Field(default=0, description="Episodes this call ran (0 when everything was already there).")
    reused_episodes: int = Field(default=0, description="Finished episodes found in the run folder and kept (resumed).")
    errors: int = Field(default=0, description=(
        "Episodes whose backend failed (status ``error``): left out of every statistic, retried by the next call."))
    timing: dict[str, float] = Field(default_factory=dict, description=(
        "Wall seconds of the run's phases: ``setup_s`` (protocol, tasks, demos), ``episodes_s`` (the episodes) and "
        "``reports_s`` (summary, report.md, plots, report.html); ``total_s`` with workers or Ray."))

    @property
    def cells(self) -> list[dict[str, Any]]:
        """summary.json's cells, one per model x baseline x topology (docs/results.md has their fields)."""
        return self.summary["cells"]

    @property
    def models(self) -> list[str]:
        """The models of the run's cells, in run order."""
        return list(dict.fromkeys(c["model"] for c in self.cells))

    @property
    def topologies(self) -> list[str]:
        """The topologies of the run's cells (test topologies, then ladder steps), in run order."""
        return list(dict.fromkeys(c["topology"] for c in self.cells))

    @property
    def baselines(self) -> list[str]:
        """The baselines of the run's cells (``0-shot``, ``1-shot``, ...), in run order."""
        return list(dict.fromkeys(c["baseline"] for c in self.cells))

    def cell(self, model: str, topology: str, baseline: str = "0-shot") -> dict[str, Any]:
        """The cell of ``model`` on ``topology`` at ``baseline``; :class:`UnknownCell` (a KeyError and a
        UserError) names what the run has when there is none."""
        for c in self.cells:
            if (c["model"], c["topology"], c["baseline"]) == (model, topology, baseline):
                return c
        wrong = [(what, plural, value, have) for what, plural, value, have in (
                 ("model", "models", model, self.models), ("topology", "topologies", topology, self.topologies),
                 ("baseline", "baselines", baseline, self.baselines)) if value not in have]
        parts = []
        for what, plural, value, have in wrong:
            close = difflib.get_close_matches(value, have, n=1)
            parts.append(f"no {what} '{value}'" + (f" (did you mean '{close[0]}'?)" if close else "")
                         + f"; its {plural}: {', '.join(have)}")
        if not wrong:
            parts.append(f"no cell of model '{model}' on topology '{topology}' at baseline '{baseline}'")
        raise UnknownCell(f"the run in {self.run_dir} has " + "; ".join(parts))


def run_protocol(protocol: RunConfig | Protocol | str | Path, models: list[str | Policy] | tuple = (),
                 out: str | Path | None = None, **settings: Any) -> RunResult:
    """Run ``models`` on ``protocol`` (a Protocol, a path, or a shipped name) and write the run folder.

    ``settings`` are the fields of :class:`RunConfig` (``tasks``, ``samples``, ``shots``,
    ``max_turns``, ``max_tokens``, ``temperature``, ``top_p``, ``model_options``, ``concurrency``,
    ``cache``, ``suites_dirs``, ``trained_on``, ``train_topologies``, ``topologies``, ``shard``, ``workers``,
    ``executor``, ``progress``);
    or pass one RunConfig as ``protocol``. An unknown or invalid setting is a one-line UserError
    naming it.

    Running again with the same arguments resumes: finished episodes are kept, not re-run. Every
    setting that can change an episode is the run's identity (``runner.config``): it picks the
    default run folder, keys the response cache, and a folder run under other settings is refused
    (one line naming the setting) rather than resumed. ``tasks`` and ``samples`` override the
    protocol's test task count and samples per task; ``shots`` keeps only these baselines;
    ``max_turns``, ``max_tokens``, ``temperature``, ``top_p`` override the protocol's limits and
    sampling (the run's protocol hash changes with them). ``model_options`` reach every model backend;
    with ``cache`` model responses are kept in ``<run>/cache.sqlite`` so a re-run never pays twice.
    ``trained_on``: ``topoeval export`` folders the models were trained on; evaluated tasks found in
    them raise a :class:`ContaminationWarning` and are counted in run.json; a ``"MODEL=TOPOLOGY"`` entry
    (or ``train_topologies={MODEL: TOPOLOGY}``) names a model's own topology in a transfer matrix
    (docs/transfer-matrix.md), and ``topologies`` keeps only some of a matrix's topologies.

    Before any episode, each model with episodes to run answers one cheap preflight request:
    rejected credentials or an unknown model raise :class:`topoeval.core.errors.UserError` (one line
    naming the model and the fix); a failure retrying may fix raises a :class:`BackendWarning` and
    the run goes on. Episodes whose backend still fails end in ``error``: they are left out of every
    statistic (``RunResult.errors``, the cells' ``n_errors``), and the next run retries them.

    Past one process (docs/scaling.md): ``shard`` (``"i/n"``) runs only the episodes shard i of n
    owns and writes its partial ``summary.shard-i-of-n.json`` (merge the shards with
    :func:`merge_runs`); ``workers`` runs K local processes (0: one per core) and ``executor="ray"``
    Ray tasks, each merged at the end into what an unsharded call writes.
    """
    from topoeval.runner.workers import auto_workers

    config = RunConfig.build(protocol, models, out, **settings)
    auto = auto_workers(config)  # workers not given: more than 1 only for direct: models at high concurrency
    if config.executor == Executor.ray or (config.workers is not None and config.workers != 1) or auto > 1:
        if config.shard is not None:
            raise UserError("shard runs one shard in this process; give shard or workers / executor='ray', not both")
        return _run_parallel(config, auto)
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(arun_protocol(config))


async def arun_protocol(protocol: RunConfig | Protocol | str | Path, models: list[str | Policy] | tuple = (),
                        out: str | Path | None = None, **settings: Any) -> RunResult:
    """:func:`run_protocol` inside a running event loop (same arguments, one process: no ``workers``)."""
    config = RunConfig.build(protocol, models, out, **settings)
    run = await arun_episodes(config, hold_lock=True)  # the folder stays held until its reports are written
    try:
        return summarise_shard(run) if config.shard is not None else summarise_run(run)
    finally:
        run.release()


def _run_parallel(config: RunConfig, auto: int = 1) -> RunResult:
    """The run folder set up here (run.json, plan.json, the preflight), the shards run by worker
    processes or Ray tasks, then merged here. ``auto``: the processes :func:`auto_workers` chose (they
    share the run's concurrency), when ``workers`` was not given."""
    started = time.perf_counter()
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        prepared = runner.run(arun_episodes(config, plan_only=True, hold_lock=True))
    run_dir = prepared.run_dir.resolve()
    # while the shards run, this process holds the folder beside them (a second run into it is refused);
    # merging takes it whole again
    prepared.release()
    with lock_run(run_dir, "run", shard="workers"):
        return _run_shards(config, prepared, run_dir, started, auto)


def _run_shards(config: RunConfig, prepared: EpisodeRun, run_dir: Path, started: float, auto: int) -> RunResult:
    """The shards of a prepared run folder, run by worker processes or Ray tasks, then merged."""
    from topoeval.runner.workers import DIRECT_DEFAULT_CONCURRENCY, run_local_workers, worker_count

    reused = len(finished_keys(run_dir) & set(prepared.planned))
    # the workers get the protocol as run here (no path to resolve again), absolute folders and the run
    # folder itself; the contamination check ran here, once
    worker_config = config.model_copy(update={
        "protocol": prepared.protocol, "out": run_dir, "trained_on": [], "progress": False, "workers": None,
        "executor": Executor.local, "suites_dirs": [Path(d).resolve() for d in config.suites_dirs],
        **({"concurrency": max(1, (config.concurrency or DIRECT_DEFAULT_CONCURRENCY) // auto)} if auto > 1 else {})})
    episodes_started = time.perf_counter()
    if config.executor == Executor.ray:
        from topoeval.runner.ray_executor import run_on_ray

        outcomes = run_on_ray(worker_config, run_dir, config.workers or None)
    else:
        outcomes = run_local_workers(worker_config, run_dir, auto if auto > 1 else worker_count(config.workers),
                                     progress=config.progress)
    episodes_s = time.perf_counter() - episodes_started
    failed = [o for o in outcomes if o.failure]
    if failed:
        first = failed[0]
        raise UserError(f"{len(failed)} of {len(outcomes)} shards did not finish "
                        f"(shard {first.shard}: {first.failure}); their finished episodes are kept: "
                        "run the same command again to resume")
    result = merge_runs([run_dir])
    result.new_episodes = sum(o.new_episodes for o in outcomes)
    result.reused_episodes = reused
    result.timing = {"setup_s": prepared.timing.get("setup_s", 0.0), "episodes_s": episodes_s,
                     "reports_s": result.timing.get("reports_s", 0.0), "total_s": time.perf_counter() - started}
    return result


def merge_runs(run_dirs: Sequence[str | Path], out: str | Path | None = None) -> RunResult:
    """Merge the episode files of one run's shards (one folder holding them all, or a folder per
    shard) and write the summary.json, reports and plots an unsharded run writes, into ``out``
    (default: the one folder given). Raises :class:`MissingEpisodes` (listing them) when planned
    episodes are missing, and a one-line UserError for folders of different runs or a key with two
    different results."""
    dirs = [Path(d) for d in run_dirs]
    if out is None and len(dirs) > 1:
        raise UserError("merging several folders needs out (the folder to write the merged run into)")
    out_dir = Path(out) if out is not None else dirs[0]
    for d in dirs:  # every input checked before anything is read or created (a shard still running refuses)
        if not d.is_dir():
            raise UserError(f"{d}: not a folder")
        check_idle(d, "merge")
    created = not out_dir.exists()
    try:
        with lock_run(out_dir, "merge"):
            return _merge(dirs, out_dir)
    except BaseException:
        if created:  # a refused merge leaves no folder holding only its lock file
            discard_unused(out_dir)
        raise


def _merge(dirs: list[Path], out_dir: Path) -> RunResult:
    in_place = any(out_dir.resolve() == d.resolve() for d in dirs)

    def repair() -> None:  # the folder's file repaired (a torn tail cut) before it is indexed: records are read back
        if in_place and (out_dir / EPISODES).exists():
            EpisodeStore(out_dir, EPISODES).close()

    combined = combine(dirs, prepare=repair)
    if combined.missing:
        raise MissingEpisodes(combined.missing, len(combined.plan.keys), combined.missing_by_shard())
    meta = dict(combined.meta)
    if in_place:
        append_missing(out_dir / EPISODES, combined.records)  # the folder keeps its history lines
    else:
        meta["merged_from"] = [str(d) for d in dirs]
        write_episodes(out_dir / EPISODES, combined.records)
    write_json(out_dir / RUN_JSON, meta)
    write_plan(out_dir, combined.plan)
    prompts = merge_prompts(dirs)  # what each topology showed the model, for readers (the first folder's)
    if prompts is not None and (not in_place or not os.path.lexists(out_dir / PROMPTS_JSON)):
        write_prompts(out_dir, prompts)
    run = EpisodeRun(run_dir=out_dir, protocol=Protocol.model_validate(meta["protocol"]), records=combined.records,
                     order=[(a, b, c) for a, b, c in combined.plan.order], protocol_sha256=meta["protocol_sha256"],
                     task_set_sha256=meta["task_set_sha256"], meta=meta, reused_episodes=len(combined.records),
                     planned=combined.plan.keys, error_count=combined.records.errors())
    return summarise_run(run)


def summarise_shard(run: EpisodeRun) -> RunResult:
    """A shard's partial ``summary.shard-i-of-n.json`` (its own episodes only; it says so). No reports:
    the run's summary and reports come from :func:`merge_runs` once every shard is done."""
    assert run.shard is not None
    owned = sum(1 for key in run.planned if run.shard.owns(key))
    summary = build_summary(
        run.protocol.name, run.records, run.order,
        extra={"run_id": run.run_dir.name, "protocol_sha256": run.protocol_sha256,
               "task_set_sha256": run.task_set_sha256,
               "partial": {"shard": run.shard.label, "episodes": len(run.records), "planned": owned,
                           "planned_total": len(run.planned),
                           "note": "one shard of the run: `topoeval merge` its folder(s) for the run's summary"}},
        base_model=run.protocol.base_model, ladder_steps=run.ladder_steps, matrix=run.meta.get("matrix"),
    )
    write_json(run.run_dir / run.shard.summary_name, summary)
    return RunResult(run_dir=run.run_dir, summary=summary, new_episodes=run.new_episodes,
                     reused_episodes=run.reused_episodes, errors=run.errors, timing=dict(run.timing))


def summarise_run(run: EpisodeRun) -> RunResult:
    """Write ``summary.json`` and the reports of a finished episode phase; stamp run.json's end."""
    summary = build_summary(
        run.protocol.name, run.records, run.order,
        extra={"run_id": run.run_dir.name, "protocol_sha256": run.protocol_sha256,
               "task_set_sha256": run.task_set_sha256, "tool_formats": run.meta.get("tool_formats")},
        base_model=run.protocol.base_model, ladder_steps=run.ladder_steps, matrix=run.meta.get("matrix"),
    )
    write_json(run.run_dir / "summary.json", summary)
    started = time.perf_counter()
    write_run_reports(summary, run.records, run.run_dir)
    timing = {**run.timing, "reports_s": time.perf_counter() - started}
    finish_run(run)
    return RunResult(run_dir=run.run_dir, summary=summary, new_episodes=run.new_episodes,
                     reused_episodes=run.reused_episodes, errors=run.errors, timing=timing)


def compare_runs(run_dirs: Sequence[str | Path]) -> dict[str, Any]:
    """Several runs of one protocol side by side: ``{"protocol", "cells", "matrix", "notes"}``, each cell's
    model labelled ``model (run folder)`` and ties marked across the runs by the one tie rule; ``matrix``
    (runs of a matrix protocol, else None): every run's matrix rows so labelled, the axis attribution
    refitted over all of them. Runs of
    different protocols are a one-line UserError; different task sets are a note (ties then compare
    unlike samples)."""
    from topoeval.analysis.stats import mark_ties
    from topoeval.runner.store import read_json

    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise UserError("compare needs at least one run folder")
    summaries = [read_json(d / "summary.json") for d in dirs]
    protocols = {s["protocol"] for s in summaries}
    if len(protocols) > 1:
        raise UserError(f"runs of different protocols cannot be compared: {', '.join(sorted(protocols))}")
    cells = [{**c, "model": f"{c['model']} ({d.name})"}
             for d, s in zip(dirs, summaries, strict=True) for c in s["cells"]]
    mark_ties(cells)
    notes = []
    if len({s.get("task_set_sha256") for s in summaries}) > 1:
        notes.append("the runs used different task sets (task_set_sha256 differs); ties compare unlike samples")
    from topoeval.analysis.matrix import combine_matrices

    matrix = combine_matrices([(d.name, s.get("matrix")) for d, s in zip(dirs, summaries, strict=True)])
    return {"protocol": summaries[0]["protocol"], "cells": cells, "matrix": matrix, "notes": notes}


def compare_paired(run_dirs: Sequence[str | Path], models: Sequence[str] | None = None) -> Any:
    """The paired comparison ``topoeval compare`` prints (:class:`topoeval.analysis.paired_runs.PairedRuns`): two
    models of one run (``models`` A B), or two runs of one protocol and task set, per cell: the tasks that flipped
    0 → 1 and 1 → 0, McNemar's exact p, paired bootstrap CIs of success, dq and each dimension, and the verdict
    (docs/collapse-report.md#paired-comparison). Different task sets are a one-line UserError."""
    from topoeval.analysis.paired_runs import paired_runs

    return paired_runs(run_dirs, models)


def sensitivity_matrix(target: Any, n_tasks: int) -> dict[str, Any]:
    """The sensitivity matrix of one target (:mod:`topoeval.analysis.sensitivity`): the reference
    policies' episodes on ``n_tasks`` of its test tasks (run by the runner), then their matrix."""
    from topoeval.analysis.sensitivity import POLICIES, build_matrix
    from topoeval.runner.reference_runs import reference_scores, target_tasks

    tasks = target_tasks(target, n_tasks)
    return build_matrix(target, tasks, reference_scores(target, tasks, POLICIES))


from topoeval.api.sweep import run_sweep  # noqa: E402  (it runs through run_protocol above)
