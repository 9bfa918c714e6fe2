"""``--executor ray``: the run's shards as Ray tasks, on an existing Ray cluster or a local one.

Each shard is one Ray task (``num_cpus=1``) that runs the async episode loop of its keys in a
scratch folder on its node and returns the records; the driver appends them to
``episodes.shard-i-of-n.jsonl`` in the run folder as each task finishes, so nothing needs a shared
filesystem. A task whose worker process dies is retried by Ray itself (``max_retries``); a task
that still fails leaves its keys missing, and the next run of the same command runs only those
(every task is told which of its keys the run folder already has).

The API key (``--api-key``) is not in what a task is sent: the pickled :class:`RunConfig` goes
without it (:func:`without_key`), and the task reads it from its environment, ``$TOPOEVAL_API_KEY``
(:data:`API_KEY_ENV`), which the driver sets through the task's ``runtime_env``.

Which cluster: ``ray.init()`` as Ray resolves it — ``RAY_ADDRESS`` (e.g. ``auto`` on a node of a
started cluster, or ``ray://head:10001``), else a local instance started for this run and stopped
after it. A caller that already called ``ray.init(...)`` keeps its own.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.runner.config import RunConfig
from topoeval.runner.shards import Shard
from topoeval.runner.store import EpisodeStore, finished_keys
from topoeval.runner.workers import ShardOutcome

#: Ray retries a task whose worker process died this many times (system failures, not exceptions).
MAX_RETRIES = 3
INSTALL_HINT = "--executor ray needs Ray: pip install 'topoeval[ray]'"
#: The environment variable a Ray task reads the run's API key from (never pickled with its config).
API_KEY_ENV = "TOPOEVAL_API_KEY"


def without_key(config: RunConfig) -> RunConfig:
    """``config`` without its API key: what a Ray task is sent."""
    return config.model_copy(update={"model_options": config.model_options.model_copy(update={"api_key": None})})


def with_env_key(config: RunConfig) -> RunConfig:
    """``config`` with the API key of this process's :data:`API_KEY_ENV` (unchanged when it is unset)."""
    key = os.environ.get(API_KEY_ENV)
    if not key:
        return config
    return config.model_copy(update={"model_options": config.model_options.model_copy(update={"api_key": key})})


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    return ray


def run_on_ray(config: RunConfig, run_dir: Path, workers: int | None = None) -> list[ShardOutcome]:
    """Run the run ``config`` as ``workers`` Ray tasks (default: one per CPU of the cluster) into
    ``run_dir``; returns each shard's outcome, in shard order."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        shards = [Shard(index=i, count=count) for i in range(1, count + 1)]
        finished = finished_keys(run_dir)
        key = config.model_options.api_key
        env = {"runtime_env": {"env_vars": {API_KEY_ENV: key}}} if key else {}
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False, **env)(run_shard_task)
        sent = without_key(config)  # the key goes through the task's environment, not its pickled arguments
        pending = {task.remote(sent, s, sorted(k for k in finished if s.owns(k))): s for s in shards}
        outcomes: dict[str, ShardOutcome] = {}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    shard = pending.pop(ref)
                    try:
                        records, outcome = ray.get(ref)
                    except Exception as exc:  # the task failed after Ray's retries
                        outcomes[shard.label] = ShardOutcome(shard=shard.label, failure=_task_failure(exc))
                        continue
                    store = EpisodeStore(run_dir, shard.episodes_name)
                    try:
                        for record in records:
                            store.append(record)
                    finally:
                        store.close()
                    outcomes[shard.label] = outcome
        except BaseException:  # Ctrl-C / SIGTERM: stop the tasks; what already landed stays
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        return [outcomes[s.label] for s in shards]
    finally:
        if started_here:
            ray.shutdown()


def run_shard_task(config: RunConfig, shard: Shard, done: list[str]) -> tuple[list[dict[str, Any]], ShardOutcome]:
    """Body of one Ray task: run ``shard`` less the ``done`` keys in a scratch folder; return its records."""
    from topoeval.runner.run import arun_episodes, loop_factory

    with tempfile.TemporaryDirectory(prefix=f"topoeval-shard-{shard.index}-of-{shard.count}-") as scratch:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            task_config = with_env_key(config).model_copy(update={
                "cache": False, "progress": False, "out": Path(scratch) / "run", "shard": shard})
            run = runner.run(arun_episodes(task_config, done=set(done)))
        skip = set(done)
        records = [r for r in run.records if r["key"] not in skip]  # read while the scratch folder exists
    return records, ShardOutcome(shard=shard.label, new_episodes=run.new_episodes, errors=run.errors)


def _task_failure(exc: BaseException) -> str:
    """One line for a failed Ray task: the UserError inside it as is, else the error's type and message."""
    cause = getattr(exc, "cause", None) or exc
    if isinstance(cause, UserError):
        return str(cause)
    return " ".join(f"{type(cause).__name__}: {cause}".split())[:300]
