"""The Python entry point of a whole run: episodes (runner), then summary (analysis), then reports.

``topoeval.run_protocol`` and ``topoeval run`` both come here. The runner below writes run.json and
episodes.jsonl and returns; this module asks the analysis layer for ``summary.json`` and the report
layer for ``report.md``, the plots and ``report.html``, so the runner never depends on either.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topoeval.analysis.summary import build_summary
from topoeval.core.policy import Policy
from topoeval.models.options import ModelOptions
from topoeval.protocol.schema import Protocol
from topoeval.report.files import write_run_reports
from topoeval.runner.run import BackendWarning, ContaminationWarning, EpisodeRun, arun_episodes, finish_run, loop_factory
from topoeval.runner.store import write_json

__all__ = ["RunResult", "run_protocol", "arun_protocol", "summarise_run", "ContaminationWarning", "BackendWarning"]


@dataclass
class RunResult:
    """What :func:`run_protocol` returns."""

    run_dir: Path
    summary: dict[str, Any]
    new_episodes: int = 0
    reused_episodes: int = 0
    errors: int = 0
    #: Wall seconds of the run's phases: ``setup_s`` (protocol, tasks, demos), ``episodes_s``
    #: (the episodes themselves) and ``reports_s`` (summary, report.md, plots, report.html).
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def cells(self) -> list[dict[str, Any]]:
        return self.summary["cells"]

    def cell(self, model: str, topology: str, baseline: str = "0-shot") -> dict[str, Any]:
        for c in self.cells:
            if (c["model"], c["topology"], c["baseline"]) == (model, topology, baseline):
                return c
        raise KeyError((model, topology, baseline))


def run_protocol(
    protocol: Protocol | str | Path,
    models: list[str | Policy],
    out: str | Path | None = None,
    *,
    tasks: int | None = None,
    samples: int | None = None,
    concurrency: int | None = None,
    suites_dirs: list[str | Path] | tuple = (),
    progress: bool = False,
    shots: list[int] | None = None,
    model_options: ModelOptions | None = None,
    cache: bool = True,
    max_turns: int | None = None,
    max_tokens: int | None = None,
    trained_on: list[str | Path] | tuple = (),
) -> RunResult:
    """Run ``models`` on ``protocol`` (a Protocol, a path, or a shipped name) and write the run folder.

    Running again with the same arguments resumes: finished episodes are kept, not re-run.
    ``tasks`` and ``samples`` override the protocol's test task count and samples per task;
    ``shots`` keeps only these baselines, ``max_turns`` / ``max_tokens`` override the protocol's
    limits (the run's protocol hash changes with them). ``model_options`` reach every model backend; with
    ``cache`` model responses are kept in ``<run>/cache.sqlite`` so a re-run never pays twice.
    ``trained_on``: ``topoeval export`` folders the models were trained on; evaluated tasks found in
    them raise a :class:`ContaminationWarning` and are counted in run.json.

    Before any episode, each model with episodes to run answers one cheap preflight request:
    rejected credentials or an unknown model raise :class:`topoeval.core.errors.UserError` (one line
    naming the model and the fix); a failure retrying may fix raises a :class:`BackendWarning` and
    the run goes on. Episodes whose backend still fails end in ``error``: they are left out of every
    statistic (``RunResult.errors``, the cells' ``n_errors``), and the next run retries them.
    """
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(arun_protocol(
            protocol, models, out, tasks=tasks, samples=samples, concurrency=concurrency,
            suites_dirs=suites_dirs, progress=progress, shots=shots, model_options=model_options, cache=cache,
            max_turns=max_turns, max_tokens=max_tokens, trained_on=trained_on,
        ))


async def arun_protocol(protocol: Protocol | str | Path, models: list[str | Policy], out: str | Path | None = None,
                        **options: Any) -> RunResult:
    """:func:`run_protocol` inside a running event loop (same arguments)."""
    run = await arun_episodes(protocol, models, out, **options)
    return summarise_run(run)


def summarise_run(run: EpisodeRun) -> RunResult:
    """Write ``summary.json`` and the reports of a finished episode phase; stamp run.json's end."""
    summary = build_summary(
        run.protocol.name, run.records, run.order,
        extra={"run_id": run.run_dir.name, "protocol_sha256": run.protocol_sha256,
               "task_set_sha256": run.task_set_sha256},
        base_model=run.protocol.base_model, ladder_steps=run.ladder_steps,
    )
    write_json(run.run_dir / "summary.json", summary)
    started = time.perf_counter()
    write_run_reports(summary, run.records, run.run_dir)
    timing = {**run.timing, "reports_s": time.perf_counter() - started}
    finish_run(run)
    return RunResult(run_dir=run.run_dir, summary=summary, new_episodes=run.new_episodes,
                     reused_episodes=run.reused_episodes, errors=run.errors, timing=timing)
