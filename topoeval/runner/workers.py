"""``--workers K``: K local processes, each running one shard of the run into the same run folder.

The parent sets the run folder up first (run.json, plan.json, the preflight), starts K processes
(``spawn``: a clean interpreter each, no inherited event loop or threads), each running shard
``i/K`` with its own event loop of concurrent episodes and appending to its own
``episodes.shard-i-of-K.jsonl``; the caller merges the folder when they are done. Ctrl-C or SIGTERM
to the parent stops every worker (SIGTERM, then SIGKILL after a grace period); each worker's
finished episodes are already on disk, so the same command resumes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import queue as queue_module
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.runner.config import RunConfig
from topoeval.runner.shards import Shard, episode_files

#: seconds a worker gets to stop after SIGTERM before it is killed
STOP_GRACE_S = 10.0


@dataclass
class ShardOutcome:
    """How one shard's worker ended."""

    shard: str
    new_episodes: int = 0
    errors: int = 0
    #: None when the shard finished; else why not (a one-line error, "interrupted", an exit code)
    failure: str | None = None


def check_picklable(spec: Any, where: str) -> None:
    """Worker processes get the run's arguments pickled: say so in one line when they cannot be."""
    try:
        pickle.dumps(spec)
    except Exception as exc:  # a Policy object defined in a function, a lambda, an open file, ...
        raise UserError(f"{where} needs arguments that can be sent to another process; {type(exc).__name__}: {exc} "
                        "(give models by name rather than as Policy objects)") from None


def run_local_workers(config: RunConfig, run_dir: Path, workers: int, progress: bool = False) -> list[ShardOutcome]:
    """Run shards 1..``workers`` of the run ``config`` (its ``out`` is ``run_dir``) in ``workers``
    processes; returns each shard's outcome, in shard order."""
    check_picklable(config, "workers")
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    shards = [Shard(index=i, count=workers) for i in range(1, workers + 1)]
    procs = {s.label: ctx.Process(target=_worker_main, args=(config, s, results),
                                  name=f"topoeval-shard-{s.index}-of-{s.count}") for s in shards}
    outcomes: dict[str, ShardOutcome] = {}
    for p in procs.values():
        p.start()
    try:
        with _FolderProgress(progress, run_dir) as tick:
            while len(outcomes) < len(procs):
                try:
                    out = results.get(timeout=0.25)
                    outcomes[out.shard] = out
                    continue
                except queue_module.Empty:
                    pass
                tick()
                for label, p in procs.items():
                    if label not in outcomes and not p.is_alive():
                        _drain_into(results, outcomes)
                        if label not in outcomes:
                            outcomes[label] = ShardOutcome(
                                shard=label, failure=f"worker exited with code {p.exitcode} before reporting")
    except BaseException:  # Ctrl-C, SIGTERM (raised as KeyboardInterrupt by the CLI), anything
        stop_all(list(procs.values()))
        raise
    finally:
        for p in procs.values():
            p.join(STOP_GRACE_S)
        results.close()
    return [outcomes[s.label] for s in shards]


def _drain_into(results, outcomes: dict[str, ShardOutcome]) -> None:
    """Collect every outcome still in the queue (a worker puts its own just before it exits)."""
    try:
        while True:
            out = results.get(timeout=0.5)
            outcomes[out.shard] = out
    except queue_module.Empty:
        pass


def stop_all(procs: list[multiprocessing.process.BaseProcess]) -> None:
    """SIGTERM every live worker, wait for them to close their files, then SIGKILL stragglers."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(1.0)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _worker_main(config: RunConfig, shard: Shard, results) -> None:
    """One worker process: run ``shard`` of ``config`` and report how it ended (never raises)."""
    signal.signal(signal.SIGTERM, _interrupt)
    try:  # a SIGTERM while the worker still imports is an interrupted shard too, not a traceback
        from topoeval.runner.run import arun_episodes, loop_factory

        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            run = runner.run(arun_episodes(config.model_copy(update={"shard": shard, "progress": False})))
        results.put(ShardOutcome(shard=shard.label, new_episodes=run.new_episodes, errors=run.errors))
    except KeyboardInterrupt:
        results.put(ShardOutcome(shard=shard.label, failure="interrupted"))
    except UserError as exc:
        results.put(ShardOutcome(shard=shard.label, failure=str(exc)))
    except Exception as exc:  # reported by the parent as one line per shard
        results.put(ShardOutcome(shard=shard.label, failure=f"{type(exc).__name__}: {exc}"))


class _FolderProgress:
    """A progress bar of episodes written to the folder's files (the workers' own bars are off)."""

    def __init__(self, enabled: bool, run_dir: Path):
        self.enabled, self.run_dir = enabled, Path(run_dir)
        self._bar: Any = None
        self._last = 0.0

    def _count(self) -> int:
        n = 0
        for path in episode_files(self.run_dir):
            try:
                with open(path, "rb") as fh:
                    n += sum(1 for _ in fh)
            except OSError:
                pass
        return n

    def __enter__(self):
        if not self.enabled:
            return lambda: None
        from rich.progress import MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("episodes on disk"), MofNCompleteColumn(), TimeElapsedColumn())
        self._bar.__enter__()
        self._task = self._bar.add_task("workers", total=None)

        def tick() -> None:
            now = time.monotonic()
            if now - self._last >= 1.0:
                self._last = now
                self._bar.update(self._task, completed=self._count())

        return tick

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.update(self._task, completed=self._count())
            self._bar.__exit__(*exc)
        return False


def worker_count(workers: int | None) -> int:
    """``--workers``: at least 1; 0 means one per CPU core."""
    if workers is None:
        return 1
    if workers < 0:
        raise UserError(f"workers takes a count (0: one per CPU core), not {workers}")
    return workers or (os.cpu_count() or 1)
