"""One topology's tasks of one split, in the form every framework adapter needs.

The OpenEnv server, the verifiers taskset and the inspect_ai task all ask the same four things of a
topology: its task at index ``i`` of a split (the same task ``topoeval run`` draws: the protocol's
seed for that split), its tools with their annotations, a fresh :class:`EpisodeState` under the
protocol's limits and system prompt, and the scores of a finished conversation. Scores always come
from replaying the conversation's assistant messages, in order, against a fresh world of the task
(what :func:`topoeval.reward` does): tool results a framework recorded are recomputed, so an
adapter's reward equals the evaluation's score for the same messages, limits included.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, cast

from topoeval.core.messages import AssistantMessage
from topoeval.core.suite import Effect, Split, Task, ToolSpec
from topoeval.protocol.schema import Limits, Protocol
from topoeval.protocol.topology import ResolvedTopology
from topoeval.runner.episode import EpisodeState
from topoeval.training.rewards import combine

#: The scores every adapter reports: the outcome, the composite, and each decision-quality dimension.
REPORTED = ("success", "dq", "clarification", "priority", "risk", "parallelism", "efficiency")


def mcp_annotations(spec: ToolSpec) -> dict[str, Any]:
    """MCP's tool hints for ``spec``: read tools are read-only, irreversible ones destructive; the
    world is closed (``openWorldHint`` false)."""
    return {"readOnlyHint": spec.effect == Effect.read, "destructiveHint": spec.effect == Effect.irreversible,
            "idempotentHint": spec.idempotent, "openWorldHint": False}


def topoeval_annotations(spec: ToolSpec) -> dict[str, Any]:
    """topoeval's own annotations of ``spec`` (those MCP has no hint for travel in ``_meta``)."""
    return {"effect": spec.effect.value, "idempotent": spec.idempotent, "parallel_safe": spec.parallel_safe,
            "needs_confirmation": spec.needs_confirmation, "user_channel": spec.user_channel}


def annotated_tool(spec: ToolSpec) -> dict[str, Any]:
    """A tool as adapters publish it: name, description, JSON schema, MCP hints, topoeval annotations."""
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters,
            "annotations": mcp_annotations(spec), "topoeval": topoeval_annotations(spec)}


def assistant_from_openai(message: dict[str, Any]) -> AssistantMessage:
    """An OpenAI-format assistant message (``arguments`` a JSON string or an object) as topoeval's."""
    return AssistantMessage.from_openai(message)


@dataclass(frozen=True)
class TopologyTasks:
    """The tasks of ``split`` of one topology of a protocol (see the module docstring)."""

    protocol: Protocol
    topology: ResolvedTopology
    split: str
    seed: int
    limits: Limits

    @property
    def name(self) -> str:
        return self.topology.name

    @property
    def count(self) -> int | None:
        """The protocol's task count for the split (None when it sets none)."""
        counts = getattr(self.protocol.tasks, self.split, None)
        return None if counts is None else counts.n

    def task(self, index: int) -> Task:
        """Task ``index`` of the split: the task ``topoeval run`` draws at that position."""
        return self.topology.suite.generate(self.topology.params, cast(Split, self.split), self.seed, index)

    def tasks(self, n: int, start: int = 0) -> list[Task]:
        return [self.task(i) for i in range(start, start + n)]

    def system_prompt(self) -> str:
        return self.topology.system_prompt()

    def tools(self) -> list[dict[str, Any]]:
        """The topology's tools with their annotations (:func:`annotated_tool`)."""
        return [annotated_tool(t) for t in self.topology.suite.tools]

    def episode(self, task: Task) -> EpisodeState:
        """A fresh episode of ``task``: the topology's system prompt, no demos, the protocol's limits.
        The caller closes it (``EpisodeState.close``) when done with it."""
        return EpisodeState(self.topology.suite, task, self.system_prompt(), [], self.limits)

    def replay(self, task: Task, replies: list[AssistantMessage]) -> dict[str, Any]:
        """The episode record of ``replies`` played in order against a fresh world of ``task``
        (closed once the record is made: an MCP world's server process ends here)."""
        state = self.episode(task)
        try:
            for reply in replies:
                if state.done:
                    break
                state.step(reply)
            return state.record()
        finally:
            state.close()

    def scores(self, task: Task, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The scores of a conversation in OpenAI format (only its assistant messages are read)."""
        replies = [assistant_from_openai(m) for m in messages if m.get("role") == "assistant"]
        return self.replay(task, replies)["scores"]

    def reward(self, scores: dict[str, Any], metric: str | dict[str, float] = "success") -> float:
        return combine(scores, metric)


def load_topology_tasks(protocol: Any = "wiki_to_travel", topology: str | None = None, split: str = "train",
                        *, max_turns: int | None = None, suites_dirs: list | tuple = ()) -> TopologyTasks:
    """``split`` of the protocol's train topology (or ``topology``, any topology the protocol names).
    ``protocol`` may be a protocol name, a path to its YAML, or a suite name (its default topology)."""
    dirs = tuple(str(d) for d in suites_dirs)
    if isinstance(protocol, Protocol):  # not hashable: resolved every time
        return _resolve(protocol, topology, split, max_turns, dirs)
    return _cached(str(protocol), topology, split, max_turns, dirs)


@functools.lru_cache(maxsize=64)
def _cached(protocol: str, topology: str | None, split: str, max_turns: int | None,
            suites_dirs: tuple[str, ...]) -> TopologyTasks:
    return _resolve(protocol, topology, split, max_turns, suites_dirs)


def _resolve(protocol: Any, topology: str | None, split: str, max_turns: int | None,
          suites_dirs: tuple[str, ...]) -> TopologyTasks:
    from topoeval.core.errors import UserError
    from topoeval.core.suite import SPLITS
    from topoeval.training.export import select_tasks

    if split not in SPLITS:
        raise UserError(f"unknown split '{split}' (splits: {', '.join(SPLITS)})")
    # select_tasks resolves a protocol or a bare suite, the topology and the split's seed; one task
    # is its cheapest call (tasks are generated here on demand, by index).
    sel = select_tasks(protocol, split=split, n=1, topology=topology, suites_dirs=suites_dirs)
    limits = sel.protocol.limits
    if max_turns is not None:
        limits = limits.model_copy(update={"max_turns": max_turns})
    return TopologyTasks(sel.protocol, sel.topology, split, sel.seed, limits)
