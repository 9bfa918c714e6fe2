"""Running a protocol's episodes: every model x baseline x topology x task x sample, resumable.

This layer writes ``run.json`` and ``episodes.jsonl`` and returns an :class:`EpisodeRun`; it knows
nothing of summaries or reports. :func:`topoeval.run_protocol` (``topoeval.api``) runs it, then asks
the analysis and report layers for ``summary.json``, ``report.md``, the plots and ``report.html``.
"""

from __future__ import annotations

import asyncio
import os
import time
import warnings
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.policy import Policy, SamplingParams, episodes_in_flight
from topoeval.core.users import UserSettings, use_user
from topoeval.formats.record import format_record
from topoeval.models.cache import CachedPolicy, ResponseCache
from topoeval.policies.registry import ignored_format, is_reference, make_policy
from topoeval.policies.user_model import close_user_models
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol, protocol_hash
from topoeval.protocol.schema import Protocol
from topoeval.protocol.topology import ResolvedTopology, resolve
from topoeval.runner.cleanup import Cleanup
from topoeval.runner.config import RunConfig, cache_salt, run_identity
from topoeval.runner.contamination import overlap_with_fingerprints
from topoeval.runner.episode import episode_id, episode_key, fallback_record, run_episode
from topoeval.runner.lock import RunLock, lock_run
from topoeval.runner.matrix import matrix_record, train_topologies
from topoeval.runner.merged import MergedRecords
from topoeval.runner.plan_index import PlanIndex
from topoeval.runner.prompts import PROMPTS_JSON, write_prompts
from topoeval.runner.run_json import check_run_json, now, open_run_json, run_id
from topoeval.runner.shards import Shard, write_plan_keys
from topoeval.runner.store import (
    EPISODES,
    RUN_JSON,
    EpisodeStore,
    PlannedRecords,
    episode_files,
    finished_in,
    write_json,
)
from topoeval.runner.task_catalogue import TaskCatalogue, build_catalogue, save_catalogue

#: where runs go without ``--out``: ``results/<protocol>/<run-id>/`` under the current folder (a relative
#: path, resolved when the run starts: never inside the installed package)
DEFAULT_RESULTS = Path("results")


@dataclass
class EpisodeRun:
    """What the episode phase of a run leaves: the run folder, its records, and how they were made."""

    run_dir: Path
    protocol: Protocol
    #: every record of the run folder (reused and new) in plan order: a list, or a view that reads them back
    #: from episodes.jsonl on each pass (:class:`PlannedRecords`)
    records: list[dict[str, Any]] | PlannedRecords | MergedRecords
    #: (model, baseline, topology) cells in the order the protocol lists them
    order: list[tuple[str, str, str]]
    protocol_sha256: str
    task_set_sha256: str
    #: run.json as written; :func:`finish_run` stamps its end time
    meta: dict[str, Any]
    new_episodes: int = 0
    reused_episodes: int = 0
    #: wall seconds of ``setup_s`` (protocol, tasks, demos) and ``episodes_s``
    timing: dict[str, float] = field(default_factory=dict)
    #: the shard this process ran (``records`` are then the shard's own), None for the whole run
    shard: Shard | None = None
    #: every planned episode key of the run (all shards), in plan order (a list, or the run's :class:`PlanIndex`)
    planned: Sequence[str] | PlanIndex = field(default_factory=list)
    #: how many records ended in ``error``, when the run counted them (else counted over ``records``)
    error_count: int | None = None
    #: the hold on the run folder, when the caller asked to keep it (``hold_lock``): see :meth:`release`
    lock: RunLock | None = None

    def release(self) -> None:
        """Give the run folder back (after the summary and reports are written); safe to call twice."""
        if self.lock is not None:
            self.lock.release()

    @property
    def errors(self) -> int:
        if self.error_count is not None:
            return self.error_count
        return sum(1 for r in self.records if r["status"] == "error")

    @property
    def ladder_steps(self) -> list[tuple[str, str | None]]:
        """The ladder curve's x axis: the (first) ID topology, then each ladder step with its axis."""
        if not self.protocol.ladder:
            return []
        start = next(t.name for t in self.protocol.test if t.role == "id")
        return [(start, None), *((s.name, s.axis or s.name) for s in self.protocol.ladder)]


def finish_run(run: EpisodeRun) -> None:
    """Stamp the run's end time into run.json (after its reports are written)."""
    run.meta["ended"] = now()
    write_json(run.run_dir / RUN_JSON, run.meta)


def baseline_name(shots: int) -> str:
    return f"{shots}-shot"


class ContaminationWarning(UserWarning):
    """A model declared training data that contains evaluated tasks."""


def loop_factory():
    """uvloop's event loop when installed (it halves the harness's own cost per request), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def arun_episodes(config: RunConfig | Protocol | str | Path, models: list[str | Policy] | tuple = (),
                        out: str | Path | None = None, *, done: Collection[str] = (), plan_only: bool = False,
                        hold_lock: bool = False, **settings: Any) -> EpisodeRun:
    """The episode phase of :func:`topoeval.run_protocol` (see there, and :class:`RunConfig`): a
    RunConfig, or the protocol, models, out and settings it is built from.

    ``config.shard``: run only the keys this shard owns, appending to its own episode file (see
    :mod:`topoeval.runner.shards`); ``done``: keys finished elsewhere (a Ray task's driver folder),
    not run again; ``plan_only``: write run.json and plan.json, check the models, run nothing.

    The run folder is held (:func:`topoeval.runner.lock.lock_run`) from before anything in it is read
    until the episodes are written; ``hold_lock``: the returned run keeps holding it (its caller writes
    the summary and reports, then calls :meth:`EpisodeRun.release`). Whatever fails, every backend,
    the episode file, the response cache and the user models are closed (:class:`Cleanup`).
    """
    t0 = time.perf_counter()
    config = RunConfig.build(config, models, out, **settings)
    registry = SuiteRegistry(config.suites_dirs)
    protocol = config.protocol if isinstance(config.protocol, Protocol) else load_protocol(config.protocol, registry)
    protocol = config.effective_protocol(protocol)
    shard, models, out = config.shard, config.models, config.out
    if not models:
        raise UserError("no model given (models=[...], e.g. models=['oracle'])")
    if (ignored := ignored_format(list(models), config.model_options.tool_format)) is not None:
        warnings.warn(ignored, BackendWarning, stacklevel=2)
    options = config.model_options.model_copy(update={"reply_limits": config.reply_limits})
    async with Cleanup() as cleanup:
        policies = []
        for m in models:  # each backend is closed however the run ends, from the moment it exists
            policy = make_policy(m, options)
            policies.append(policy)
            cleanup.add(f"model '{policy.name}'", policy.aclose)
        names = [p.name for p in policies]
        if len(set(names)) != len(names):
            raise UserError(f"the same model is named twice: {names}")
        k = config.samples or protocol.samples
        if config.train_topologies:  # a mistake in --trained-on MODEL=TOPOLOGY ends the run before its folder exists
            train_topologies(protocol, names, config.train_topologies)

        topologies = [resolve(t, registry) for t in protocol.topologies()]
        problems = [f"topology '{t.name}': {p}" for t in topologies
                    for p in t.suite.run_problems(t.params, config.user_model)]
        if problems:  # before the run folder, the preflight and the first world
            raise UserError(problems[0])
        counts = {t.name: config.tasks if config.tasks is not None else (t.spec.n_tasks or protocol.tasks.test.n)
                  for t in topologies}
        catalogue = build_catalogue(topologies, protocol.tasks.test.seed, counts,
                                    run_dir=Path(out) if out else None, fingerprints=bool(config.trained_on))
        p_hash, t_hash = protocol_hash(protocol), catalogue.sha256
        versions = {t.suite.name: v for t in topologies if (v := t.suite.behaviour_version()) is not None}
        identity = run_identity(config, protocol, p_hash, t_hash, policies, versions)
        run_dir = Path(out) if out else DEFAULT_RESULTS / protocol.name / run_id(names, identity, k)
        if not run_dir.exists():  # a run that fails before writing anything leaves no folder behind
            cleanup.on_error("the new run folder", lambda: _remove_if_unused(run_dir))
        lock = lock_run(run_dir, "run", shard=f"shard-{shard.index}-of-{shard.count}" if shard else None)
        (cleanup.on_error if hold_lock else cleanup.add)("the run folder's lock", lock.release)
        check_run_json(run_dir / RUN_JSON, identity, protocol.name)
        plan = PlanIndex(names, [baseline_name(b) for b in protocol.baselines.shots],
                         {name: t.ids for name, t in catalogue.topologies.items()}, [t.name for t in topologies], k)
        store = EpisodeStore(run_dir, shard.episodes_name if shard else EPISODES, plan=plan)
        cleanup.add("the episode file", store.close)
        # an episode that ended in `error` (the backend failed, not the model) is not finished: it runs again;
        # so is one finished in another of the folder's episode files (a shard's), or elsewhere (`done`)
        elsewhere = set(done) | {key for path in episode_files(run_dir) if path != store.path
                                 for key in finished_in(path)}

        def runs(pos: int, key: str) -> bool:
            return not store.finished_at(pos) and key not in elsewhere and (shard is None or shard.owns(key))

        pending_by_model: dict[str, int] = dict.fromkeys(names, 0)
        for pos, model, key in plan.entries():
            if runs(pos, key):
                pending_by_model[model] += 1
        await _preflight(policies, {name for name, n in pending_by_model.items() if n})
        weights = {p.name: p.weights for p in policies if p.weights}
        meta = open_run_json(run_dir, protocol, identity, names, k, counts, weights)
        inference = {p.name: p.inference for p in policies if p.name in names and p.inference}
        if inference:  # what local decoding ran on (build, CPU features, batching): a resumed run adds its own
            meta["inference"] = {**meta.get("inference", {}), **inference}
        formats = format_record(policies, topologies)  # each model's tool-call format, and format-shift steps
        meta["tool_formats"] = {"models": {**meta.get("tool_formats", {}).get("models", {}), **formats["models"]},
                                "topologies": formats["topologies"]}
        # what `topoeval run` needs besides the protocol name to reproduce this run (publish cites it)
        meta["overrides"] = config.overrides()
        meta["config"] = config.record()
        if protocol.matrix is not None:  # each topology's axes and each model's own topology (the diagonal)
            meta["matrix"] = matrix_record(protocol, topologies, names, config.train_topologies, meta.get("matrix"))
        overlap = overlap_with_fingerprints(list(config.trained_on), catalogue.fingerprints or set()) \
            if config.trained_on else {}
        if overlap:
            meta["trained_on"] = overlap
        write_json(run_dir / RUN_JSON, meta)
        if not os.path.lexists(run_dir / PROMPTS_JSON):  # what each topology showed the model, for readers
            write_prompts(run_dir, topologies)
        save_catalogue(run_dir, catalogue)
        order = [(m, baseline_name(b), t.name) for m in names for b in protocol.baselines.shots for t in topologies]
        write_plan_keys(run_dir, names, k, order, plan.keys())
        for export, count in overlap.items():
            if count:
                warnings.warn(f"the model was trained on {count} of the evaluated tasks ({export}): "
                              "its scores on them are not out-of-sample", ContaminationWarning, stacklevel=2)
        reused = store.counts()[0]
        cache_path = run_dir / (shard.cache_name if shard else "cache.sqlite")  # SQLite is per shard, not shared
        cached = config.cache and not all(is_reference(m) for m in models)
        response_cache = ResponseCache(cache_path) if cached else None
        if response_cache is not None:
            cleanup.add("the response cache", response_cache.close)
            policies = [p if is_reference(m) else CachedPolicy(p, response_cache, cache_salt(identity, p.name))
                        for m, p in zip(models, policies, strict=True)]
        if config.user_model is not None:
            cleanup.add("the user models", lambda: asyncio.to_thread(close_user_models))

        demos = {} if plan_only else await _build_demo_cache(protocol, topologies, registry, k)
        by_name = {p.name: p for p in policies}
        total = 0 if plan_only else sum(pending_by_model.values())

        new = 0
        started = time.perf_counter()
        timing: dict[str, float] = {"setup_s": started - t0}
        with _progress(config.progress, total) as advance:
            user = UserSettings(model=config.user_model)
            sampling = _sampling(protocol)  # the same for every episode; each turn derives its seed (for_turn)

            async def one(policy: Policy, shots: int, topo: ResolvedTopology, task, s: int, key: str) -> None:
                nonlocal new
                with use_user(user, config.model_options):  # who answers ask_user (demos: the reference)
                    record = await run_episode(
                        policy=policy, suite=topo.suite, task=task, system_prompt=topo.system_prompt(),
                        demos=demos.get((topo.name, shots, s), ([], []))[0], limits=protocol.limits,
                        sampling=sampling, sample=s, shots=shots,
                        labels={
                            "key": key, "episode_id": episode_id(key), "model": policy.name,
                            "baseline": baseline_name(shots), "topology": topo.name,
                            "suite": topo.suite.name, "role": topo.spec.role,
                            "demo_task_ids": demos.get((topo.name, shots, s), ([], []))[1],
                        },
                        reply_limits=config.reply_limits,
                    )
                try:
                    store.append(record)
                except (ValueError, TypeError, RecursionError) as exc:  # not writable as JSON: an error record
                    store.append(fallback_record({k: record.get(k) for k in _LABELS}, task, exc, record.get("errors")))
                new += 1
                advance()

            if total:
                jobs = _jobs(plan, catalogue, topologies, protocol.baselines.shots, runs)
                slots = {p.name: episodes_in_flight(p, config.concurrency) for p in policies}
                await _run_pool(jobs, by_name, slots, one)
            timing["episodes_s"] = time.perf_counter() - started

    # the folder's episodes (a shard's: those it owns), in plan order however they were run: read back
    # from the file when they are used (a million records are never in memory at once)
    if episode_files(run_dir) == [store.path]:
        records: Any = PlannedRecords(store, None if shard is None else shard.owns)
        errors = store.errors()
    else:  # shards run into one folder: every file's, merged as `topoeval merge` does, read back the same way
        merged = MergedRecords(episode_files(run_dir), plan, None if shard is None else shard.owns)
        records, errors = merged, merged.errors()
    return EpisodeRun(run_dir=run_dir, protocol=protocol, records=records, order=order,
                      protocol_sha256=p_hash, task_set_sha256=t_hash, meta=meta, new_episodes=new,
                      reused_episodes=reused, timing=timing, shard=shard, planned=plan, error_count=errors,
                      lock=lock if hold_lock else None)


#: the fields of an episode record the runner labels it with (kept in a record that replaces an unwritable one)
_LABELS = ("key", "episode_id", "model", "baseline", "topology", "suite", "role", "demo_task_ids", "sample", "shots")


def _remove_if_unused(run_dir: Path) -> None:
    """Remove a run folder this run created when it holds nothing but lock files (the run failed first)."""
    if run_dir.is_dir() and all(p.name.startswith("run.") and p.name.endswith(".lock") for p in run_dir.iterdir()):
        for p in run_dir.iterdir():
            p.unlink()
        run_dir.rmdir()


def _jobs(plan: PlanIndex, catalogue: TaskCatalogue, topologies: list[ResolvedTopology], shots_list: list[int],
          runs) -> Iterator[tuple[str, int, ResolvedTopology, Any, int, str]]:
    """The episodes to run, (model, shots, topology, task, sample, key), task by task: each task is made
    once (:class:`TopologyTasks`) for all its models, baselines and samples, and dropped when they are
    handed out. ``runs(pos, key)``: whether the planned episode at ``pos`` runs."""
    for topo in topologies:
        tasks = catalogue.topologies[topo.name]
        for index, task_id in enumerate(tasks.ids):
            task = None
            for name in plan.models:
                for shots in shots_list:
                    for s in range(plan.samples):
                        key = episode_key(name, baseline_name(shots), topo.name, task_id, s)
                        if not runs(plan.position_of(name, baseline_name(shots), topo.name, index, s), key):
                            continue
                        if task is None:
                            task = tasks.task(index)
                            if task.id != task_id:
                                raise UserError(f"suite '{topo.suite.name}': generate() made task {task.id} at index "
                                                f"{index}, where its task list has {task_id} (generate must be a "
                                                "pure function of its arguments)")
                        yield name, shots, topo, task, s, key


async def _run_pool(jobs: Iterator[tuple], policies: dict[str, Policy], slots: dict[str, int], one) -> None:
    """Run ``jobs`` with ``slots[model]`` episodes of each model in flight: a bounded queue and as many
    workers per model, fed task by task (memory stays flat however many episodes the run has). A
    worker that fails stops the others and the failure is raised."""
    queues: dict[str, asyncio.Queue[tuple | None]] = {name: asyncio.Queue(maxsize=2 * n) for name, n in slots.items()}

    async def feed() -> None:
        for job in jobs:
            await queues[job[0]].put(job)
        for name, n in slots.items():
            for _ in range(n):
                await queues[name].put(None)

    async def work(name: str) -> None:
        queue = queues[name]
        while (job := await queue.get()) is not None:
            await one(policies[name], *job[1:])

    tasks = [asyncio.ensure_future(feed())]
    tasks += [asyncio.ensure_future(work(name)) for name, n in slots.items() for _ in range(n)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class BackendWarning(UserWarning):
    """A model's preflight request failed in a way retrying may fix; its episodes go ahead."""


async def _preflight(policies: list[Policy], names: set[str]) -> None:
    """One cheap request per model that has episodes to run, before any episode: credentials or a
    model name that retrying cannot fix end the run here (UserError; the run's cleanup closes every
    backend)."""
    results = await asyncio.gather(*(p.preflight() for p in policies if p.name in names), return_exceptions=True)
    failure = next((r for r in results if isinstance(r, BaseException)), None)
    if failure is not None:
        raise failure
    for warning in results:
        if warning:
            warnings.warn(str(warning), BackendWarning, stacklevel=3)


def _sampling(protocol: Protocol) -> SamplingParams:
    s = protocol.sampling
    return SamplingParams(
        temperature=s.temperature, top_p=s.top_p, max_tokens=protocol.limits.max_tokens,
        seed=s.seed,
    )


async def _build_demo_cache(protocol: Protocol, topologies: list[ResolvedTopology], registry: SuiteRegistry, k: int):
    """Few-shot demonstrations per (topology, shots, sample): oracle rollouts on a fewshot split.

    One fixed, seeded draw per (topology, shots, sample) — every task of a cell sees the same
    demos (so backends can cache the prefix); different samples see different draws.
    """
    from topoeval.runner.demos import demo_messages

    cache: dict[tuple[str, int, int], tuple[list[dict[str, Any]], list[str]]] = {}
    source = resolve(protocol.train_topology(), registry) if protocol.baselines.demos_from == "source" else None
    for topo in topologies:
        for shots in protocol.baselines.shots:
            if shots == 0:
                continue
            donor = source or topo
            for s in range(k):
                cache[(topo.name, shots, s)] = await demo_messages(donor, protocol.tasks.fewshot, shots,
                                                                   seed_key=(topo.name, shots, s))
    return cache


class _progress:
    """A rich progress bar (or nothing) exposing one ``advance()`` callable."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total, self._bar = enabled and total > 0, total, None

    def __enter__(self):
        if not self.enabled:
            return lambda: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(TextColumn("episodes"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                             transient=False)
        self._bar.__enter__()
        task = self._bar.add_task("run", total=self.total)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)
        return False
