"""``--workers K``: K local processes, each running one shard of the run into the same run folder.

The parent sets the run folder up first (run.json, plan.json, the preflight), starts K processes
(``spawn``: a clean interpreter each, no inherited event loop or threads), each running shard
``i/K`` with its own event loop of concurrent episodes and appending to its own
``episodes.shard-i-of-K.jsonl``; the caller merges the folder when they are done. Ctrl-C or SIGTERM
to the parent stops every worker (SIGTERM, then SIGKILL after a grace period); each worker's
finished episodes are already on disk, so the same command resumes.

A worker dies with its parent (:func:`die_with_parent`), ``kill -9`` of the parent included, as the
servers topoeval starts do: on Linux the kernel sends it SIGKILL (``PR_SET_PDEATHSIG``, through the
same helper as :mod:`topoeval.models.llama_server`; it fires when the thread that started the worker
ends, and :func:`run_local_workers` holds that thread until its workers are done); everywhere, a
thread of the worker checks every :data:`PARENT_POLL_S` seconds that its parent is still the process
that started it and ends the worker when not (the fallback where prctl is not available, and the
parent that died before the worker could ask). No worker goes on writing into a run folder nobody is
running; a torn last line is repaired when the same command resumes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import queue as queue_module
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topoeval.core.choices import Executor
from topoeval.core.errors import UserError
from topoeval.runner.config import RunConfig
from topoeval.runner.shards import Shard, episode_files

#: seconds a worker gets to stop after SIGTERM before it is killed
STOP_GRACE_S = 10.0
#: seconds between a worker's checks that its parent is alive (the fallback of :func:`die_with_parent`)
PARENT_POLL_S = 1.0


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
    procs = {s.label: ctx.Process(target=_worker_main, args=(config, s, results, os.getpid()),
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


def die_with_parent(parent_pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """End this process when ``parent_pid``, the process that started it, dies (module docstring): the
    kernel's SIGKILL on Linux (``PR_SET_PDEATHSIG``), and a daemon thread that polls :func:`os.getppid`."""
    if sys.platform.startswith("linux"):
        from topoeval.models.llama_server import _die_with_parent

        _die_with_parent()  # the kernel's signal fires when the thread that started this process exits
    if os.getppid() != parent_pid:  # the parent was gone before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid, poll_s), name="topoeval-parent-watch",
                     daemon=True).start()


def _watch_parent(parent_pid: int, poll_s: float) -> None:
    """Poll until this process's parent is no longer ``parent_pid`` (it died: the process was re-parented),
    then end the process at once, as the kernel's SIGKILL would."""
    while os.getppid() == parent_pid:
        time.sleep(poll_s)
    os._exit(1)


def _worker_main(config: RunConfig, shard: Shard, results, parent_pid: int) -> None:
    """One worker process: run ``shard`` of ``config`` and report how it ended (never raises)."""
    die_with_parent(parent_pid)
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


#: Concurrent episodes one process keeps near the physical limit on the direct path: one event loop does
#: about 500-600 episodes/s of harness work (bench/throughput.py), and at 50 ms a request that is about
#: 64-128 episodes in flight; past 128, :func:`auto_workers` adds processes.
AUTO_PER_WORKER = 128
#: The direct path's default concurrency (``DirectPolicy.concurrency``), when ``--concurrency`` is not given.
DIRECT_DEFAULT_CONCURRENCY = 64


def free_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def auto_workers(config: RunConfig, cores: int | None = None) -> int:
    """The local processes a run takes when ``--workers`` is not given (``workers=None``): 1, except for
    runs whose models are all ``direct:`` (a server's OpenAI-compatible API, where one process's CPU is
    the bound at high concurrency) at a ``--concurrency`` of :data:`AUTO_PER_WORKER` or more: one process
    per 128 concurrent episodes, at most one per core but one (2 workers on 2 cores ran slower than 1:
    docs/scaling.md). The processes share the run's concurrency: ``concurrency // K`` each, so the
    server never sees more requests in flight than one process would have sent."""
    if config.workers is not None or config.shard is not None or config.executor != Executor.local:
        return 1
    if not config.models or not all(isinstance(m, str) and m.startswith("direct:") for m in config.models):
        return 1
    concurrency = config.concurrency or DIRECT_DEFAULT_CONCURRENCY
    cores = free_cores() if cores is None else cores
    return max(1, min(concurrency // AUTO_PER_WORKER, cores - 1))


def worker_count(workers: int | None) -> int:
    """``--workers``: at least 1; 0 means one per CPU core."""
    if workers is None:
        return 1
    if workers < 0:
        raise UserError(f"workers takes a count (0: one per CPU core), not {workers}")
    return workers or (os.cpu_count() or 1)
