"""Supervised fine-tuning data: successful episodes as chat conversations.

``topoeval export PROTOCOL --format sft --out DIR`` writes ``DIR/sft.parquet`` and the export
manifest (``topoeval_export.json``, with every task's fingerprint, so ``topoeval run --trained-on
DIR`` checks an evaluation against it). Each row is one successful episode:

| column | content |
|---|---|
| ``id`` | ``<task id>#<source>`` |
| ``task_id`` / ``fingerprint`` | the task, and its fingerprint (the contamination check's key) |
| ``messages`` | the conversation in OpenAI format: the topology's system prompt, the task, each assistant turn (``tool_calls`` with ``arguments`` as JSON strings), each ``tool`` result, the final answer |
| ``tools`` | JSON: the tools offered, in OpenAI format |
| ``topology`` / ``split`` / ``source`` | where it came from: ``oracle``, ``policy:<model>`` or ``run:<folder>`` |

Conversations come from a policy run on the split's tasks (the oracle by default: it solves every
task, so every task gives one), and from the successful episodes of run folders (rejection-sampled
self-training: ``--from-run``). Rendered with :func:`topoeval.models.llamacpp_template.chat_template`
they are exactly the text the embedded model reads at inference. Arguments stay JSON strings, and
``tools`` a JSON string, because ``datasets`` merges the keys of differing dicts into one schema
full of nulls.

An episode whose offered tools change mid-conversation (a later instruction adds tools) is left
out: one training conversation renders one tool list. The count is reported.

``rationale=True`` puts the suite's line of reasoning (:meth:`topoeval.core.suite.Suite.rationale`)
in the text of each assistant turn it has one for, before the turn's calls (the travel suite's:
the chosen flight field by field, before ``hold_seat``). The manifest's
``prompt_format`` is then :data:`RATIONALE_FORMAT`, which the training record carries, so the
adapter is run with text before calls allowed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from topoeval.core.errors import UserError
from topoeval.core.policy import SamplingParams
from topoeval.core.suite import Split, Task, canonical_json
from topoeval.core.version import __version__
from topoeval.models.llamacpp_tools import PROMPT_FORMAT, RATIONALE_FORMAT
from topoeval.protocol.schema import Protocol
from topoeval.protocol.topology import ResolvedTopology, topology_from
from topoeval.runner.contamination import MANIFEST

SFT_FILE = "sft.parquet"
_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


@dataclass
class SftData:
    """Conversations and what was left out on the way."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    #: source -> {"episodes": seen, "kept": successful conversations, "failed": not successful,
    #: "tools_change": left out}
    sources: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, other: SftData) -> None:
        self.rows += other.rows
        self.tasks += other.tasks
        self.sources.update(other.sources)


def offered_tools(topo: ResolvedTopology, task: Task) -> list[dict[str, Any]] | None:
    """The tools an episode of ``task`` is offered, or None when a later instruction changes them."""
    if any(i.tools_added for i in task.instructions):
        return None
    withheld = set(task.withheld_tools)
    return [t.openai() for t in topo.suite.tools if t.name not in withheld]


def _message(m: dict[str, Any]) -> dict[str, Any]:
    """One message with every key present (a stable parquet schema) and string arguments."""
    out = {k: m.get(k) for k in _MESSAGE_KEYS}
    if out["tool_calls"]:
        out["tool_calls"] = [
            {"id": c.get("id") or f"call_{i}", "type": "function",
             "function": {"name": c["function"]["name"], "arguments": _arguments(c["function"].get("arguments"))}}
            for i, c in enumerate(out["tool_calls"])
        ]
    else:
        out["tool_calls"] = None
    return out


def with_rationale(messages: list[dict[str, Any]], topo: ResolvedTopology, task: Task) -> list[dict[str, Any]]:
    """``messages`` with each textless assistant turn of calls given the suite's rationale, where it has one."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls") and not m.get("content"):
            line = topo.suite.rationale(task, out, m["tool_calls"])
            if line:
                m = {**m, "content": line}
        out.append(m)
    return out


def _arguments(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps({} if args is None else args, ensure_ascii=False)


def conversation_row(record: dict[str, Any], topo: ResolvedTopology, task: Task, split: str, source: str,
                     tools: list[dict[str, Any]], rationale: bool = False) -> dict[str, Any]:
    """The SFT row of one episode record (its messages start at the task's prompt, demos excluded);
    ``rationale``: with the suite's line of reasoning before the calls it has one for."""
    messages = [{"role": "system", "content": topo.system_prompt()}, *record["messages"]]
    if rationale:
        messages = with_rationale(messages, topo, task)
    return {
        "id": f"{task.id}#{source}",
        "task_id": task.id,
        "fingerprint": task.fingerprint(),
        "messages": [_message(m) for m in messages],
        "tools": json.dumps(tools, ensure_ascii=False),
        "topology": topo.name,
        "split": split,
        "source": source,
    }


def _succeeded(record: dict[str, Any]) -> bool:
    return record.get("status") == "done" and (record.get("scores") or {}).get("success") == 1


async def policy_conversations(protocol: Protocol, topo: ResolvedTopology, tasks: list[Task], split: str,
                               policy: Any = "oracle", model_options: Any = None, rationale: bool = False) -> SftData:
    """Run ``policy`` (a model string or a Policy) once on each task; keep the successful episodes."""
    from topoeval.policies.registry import make_policy
    from topoeval.runner.episode import run_episode

    pol = make_policy(policy, model_options)
    source = "oracle" if policy == "oracle" else f"policy:{getattr(pol, 'name', policy)}"
    s = protocol.sampling
    sampling = SamplingParams(temperature=s.temperature, top_p=s.top_p, max_tokens=protocol.limits.max_tokens,
                              seed=s.seed)
    gate = asyncio.Semaphore(max(1, getattr(pol, "concurrency", 1)))
    counts = {"episodes": 0, "kept": 0, "failed": 0, "tools_change": 0}
    out = SftData(sources={source: counts})

    async def one(task: Task) -> tuple[Task, dict[str, Any] | None]:
        if offered_tools(topo, task) is None:
            return task, None
        async with gate:
            return task, await run_episode(
                policy=pol, suite=topo.suite, task=task, system_prompt=topo.system_prompt(), demos=[],
                limits=protocol.limits, sampling=sampling, sample=0, shots=0, labels={})

    try:
        results = await asyncio.gather(*(one(t) for t in tasks))
    finally:
        if hasattr(pol, "aclose"):
            await pol.aclose()
    for task, record in results:
        counts["episodes"] += 1
        if record is None:
            counts["tools_change"] += 1
        elif not _succeeded(record):
            counts["failed"] += 1
        else:
            counts["kept"] += 1
            out.rows.append(conversation_row(record, topo, task, split, source, offered_tools(topo, task) or [],
                                             rationale))
            out.tasks.append(task)
    return out


def run_conversations(run_dir: str | Path, suites_dirs: list | tuple = (), *, protocol: Protocol) -> SftData:
    """The successful episodes of a run folder (any model, any baseline: demos are not part of an
    episode's messages), each with the task regenerated from ``protocol``: the protocol the user named,
    loaded from the user's file with the user's ``suites_dirs``. A folder whose run.json records another
    protocol (its name, or its content with the run's overrides applied) is refused in one line: what a
    folder's run.json names is never resolved, imported or run
    (:func:`topoeval.runner.recorded_protocol.check_run_protocol`)."""
    from topoeval.runner.recorded_protocol import check_run_protocol
    from topoeval.runner.store import EPISODES, RUN_JSON, iter_records

    run_dir = Path(run_dir)
    try:
        meta = json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("run.json is not an object")
        protocol = check_run_protocol(run_dir, meta, protocol, label=f"--from-run {run_dir}")
        records = iter_records(run_dir / EPISODES)  # a damaged line (a torn tail) is skipped, with a warning
    except (OSError, ValueError) as exc:
        raise UserError(f"--from-run {run_dir}: not a topoeval run folder ({type(exc).__name__}: {exc})") from None
    source = f"run:{run_dir.name}"
    counts = {"episodes": 0, "kept": 0, "failed": 0, "tools_change": 0}
    out = SftData(sources={source: counts})
    topologies: dict[str, ResolvedTopology] = {}
    seen: set[str] = set()
    for record in records:
        counts["episodes"] += 1
        if not _succeeded(record):
            counts["failed"] += 1
            continue
        name = record["topology"]
        if name not in topologies:
            topologies[name] = topology_from(name, protocol, suites_dirs)
        topo = topologies[name]
        task, split = regenerate_task(topo, protocol, record["task_id"])
        tools = offered_tools(topo, task)
        if tools is None:
            counts["tools_change"] += 1
            continue
        row = conversation_row(record, topo, task, split, source, tools)
        key = canonical_json(row["messages"])  # the same conversation twice (e.g. two baselines) once
        if key in seen:
            continue
        seen.add(key)
        counts["kept"] += 1
        out.rows.append(row)
        out.tasks.append(task)
    return out


def regenerate_task(topo: ResolvedTopology, protocol: Protocol, task_id: str) -> tuple[Task, str]:
    """The task of ``task_id`` (``suite/split/index-seed``) under the run's protocol."""
    try:
        _, split, rest = task_id.rsplit("/", 2)
        index = int(rest.split("-", 1)[0])
        seed = getattr(protocol.tasks, split).seed
    except (ValueError, AttributeError):
        raise UserError(f"cannot regenerate task '{task_id}' from its run's protocol") from None
    task = topo.suite.generate(topo.params, cast(Split, split), seed, index)
    if task.id != task_id:
        raise UserError(f"task '{task_id}' does not regenerate (got '{task.id}'): a different suite version?")
    return task, split


def data_sha256(rows: list[dict[str, Any]]) -> str:
    """sha256 of the rows' canonical JSON, in order (the training record's data hash)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(canonical_json(row).encode())
        h.update(b"\n")
    return h.hexdigest()


def export_sft(protocol: Any, out: str | Path, *, split: str = "train", n: int | None = None,
               topology: str | None = None, seed: int = 0, policy: str | None = "oracle",
               from_runs: list | tuple = (), suites_dirs: list | tuple = (),
               model_options: Any = None, rationale: bool = False) -> dict[str, Any]:
    """Write ``sft.parquet`` and the manifest to ``out``; returns the manifest.

    ``policy`` (default the oracle; None for none) is run on ``n`` tasks of the split; each
    ``from_runs`` folder adds its successful episodes. ``rationale``: the policy's conversations
    carry the suite's rationale (see the module docstring).
    """
    from topoeval.core.parquet import write_rows
    from topoeval.training.export import select_tasks

    sel = select_tasks(protocol, split=split, n=n, topology=topology, seed=seed, suites_dirs=suites_dirs)
    data = SftData()
    if policy is not None:
        data.add(asyncio.run(policy_conversations(sel.protocol, sel.topology, sel.tasks, split, policy, model_options,
                                                  rationale)))
    for run_dir in from_runs:
        data.add(run_conversations(run_dir, suites_dirs, protocol=sel.protocol))
    if not data.rows:
        raise UserError(f"no successful episode to export (sources: {json.dumps(data.sources)})")
    out = Path(out)
    write_rows(data.rows, out / SFT_FILE)
    by_split: dict[str, int] = {}
    for row in data.rows:
        by_split[row["split"]] = by_split.get(row["split"], 0) + 1
    manifest = {
        "format": "sft", "prompt_format": RATIONALE_FORMAT if rationale else PROMPT_FORMAT,
        "protocol": sel.protocol.name,
        "protocol_sha256": sel.protocol_sha256, "topology": sel.topology.name, "split": split, "n": sel.n,
        "seed": sel.seed, "task_set_sha256": sel.task_set_sha256, "conversations": len(data.rows),
        "conversations_by_split": by_split, "data_sha256": data_sha256(data.rows), "sources": data.sources,
        "topoeval_version": __version__, "fingerprints": sorted({t.fingerprint() for t in data.tasks}),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def read_sft(folder: str | Path) -> list[dict[str, Any]]:
    """The rows of an SFT export folder (or its parquet file), ``tools`` parsed back into a list."""
    from topoeval.core.parquet import read_rows

    path = Path(folder)
    path = path / SFT_FILE if path.is_dir() else path
    if not path.is_file():
        raise UserError(f"{folder}: no {SFT_FILE} (write one with: topoeval export PROTOCOL --format sft --out DIR)")
    rows = read_rows(path)
    for row in rows:
        row["tools"] = json.loads(row["tools"])
    return rows
