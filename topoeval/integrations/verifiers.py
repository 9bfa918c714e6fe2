"""A verifiers 0.4 taskset over a topoeval topology (extra ``topoeval[verifiers]``: ``verifiers>=0.4,<0.5``).

::

    vf-eval topoeval-verifiers --env.taskset.protocol wiki_to_travel \\
        --env.taskset.topology travel --env.taskset.split train --model ... --client.base-url ...

or, in Python, ``load_taskset(protocol, topology=..., split=..., n=...)`` and verifiers' own
``Env``/``run_episode`` machinery (see docs/training.md). verifiers loads plugins by top-level
module, so the taskset's id is ``topoeval-verifiers`` (the :mod:`topoeval_verifiers` alias).

- Tasks: :class:`TopoevalTask`, one per task of the split (the tasks ``topoeval run`` draws at
  those positions), prompt = the task's user message, system prompt = the topology's.
- Tools: :class:`TopoevalToolset`, an MCP server per rollout holding the task's world (closed when
  verifiers stops that server: an MCP topology's own server process ends with it); each tool
  keeps its JSON schema, MCP's hints (read-only, destructive = irreversible, idempotent, closed
  world) and topoeval's annotations under ``_meta["topoeval"]``. Tool names are bare.
- Multi-turn tasks: :class:`TopoevalEnv`, the taskset's env, sends a task's later instructions one
  at a time, each when the model answers without a tool call. Tools a task never offers are not
  listed; tools a later instruction adds are listed from the start (an MCP server's list is fixed
  per rollout), and the replay judges a call to one before its instruction invalid, as
  ``topoeval run`` does.
- Harness: :class:`TopoevalHarness`, verifiers' ``null`` harness (a plain tool-calling loop, so the
  model sees exactly the topology's tools); the taskset makes it the default.
- Scoring: rewards ``topoeval_success`` (weight 1) and ``topoeval_dq`` (weight 0; reweigh with
  ``--env.taskset.task.rewards.topoeval_dq.weight``), metrics ``topoeval_<dimension>`` (absent
  where the dimension does not apply) and the episode's counts (``topoeval_tool_calls``, ...). The
  trace's assistant messages are replayed against a fresh world of the task, so the numbers equal
  ``topoeval run``'s for the same messages — the protocol's turn and tool-call limits included (a
  ``@vf.stop`` also ends the rollout at ``max_turns``). The live MCP results a model sees match
  topoeval's except for arguments outside a tool's schema (MCP drops them before the call; the replay
  judges them as topoeval does).

The classic verifiers 0.3 ``MultiTurnEnv`` adapter is retired: 0.4 removed that API, 0.3 needs
``mcp<2`` (which the main environment's MCP bridge and 0.4 both exceed), and framework-agnostic
training stays available through ``topoeval export`` and :func:`topoeval.reward`.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.core.suite import Task
from topoeval.integrations.topology_tasks import (
    REPORTED,
    TopologyTasks,
    load_topology_tasks,
    mcp_annotations,
    topoeval_annotations,
)

try:
    import verifiers.v1 as vf
    from verifiers.v1.harnesses.null.harness import NullHarness
except ImportError:
    raise UserError("topoeval.integrations.verifiers needs the 'verifiers' extra (verifiers>=0.4): "
                    "pip install 'topoeval[verifiers]'") from None

__all__ = ["TopoevalTaskset", "TopoevalHarness", "TopoevalEnv", "TopoevalTask", "TopoevalData", "TopoevalToolset",
           "TopoevalTasksetConfig", "load_taskset", "harness_requirements"]

#: The id verifiers loads this taskset (and its default harness) by.
PLUGIN_ID = "topoeval-verifiers"
COUNTS = ("tool_calls", "invalid_calls", "unsafe_commits", "over_asks", "serial_violations", "redundant_calls")


class TopoevalData(vf.TaskData):
    """One topoeval task on the wire: the task itself and where it comes from."""

    topoeval_task: dict[str, Any]
    """The full task (``Task.model_dump``), ground truth included."""
    protocol: str
    """Protocol name or path (or a suite name)."""
    topology: str
    """Topology name within the protocol."""
    split: str
    """Split the task is from."""
    max_turns: int | None = None
    """Turn limit override (None: the protocol's)."""
    suites_dirs: list[str] = []
    """Extra suite folders, absolute."""


class TopoevalTasksetConfig(vf.TasksetConfig):
    """``--env.taskset.*``: which tasks of which topology."""

    protocol: str = "wiki_to_travel"
    """Protocol name, path to its YAML, or a suite name."""
    topology: str | None = None
    """Topology of the protocol (default: its train topology)."""
    split: str = "train"
    """train | dev | test | fewshot."""
    n: int | None = None
    """Number of tasks (default: the protocol's count for the split)."""
    start: int = 0
    """Index of the first task."""
    max_turns: int | None = None
    """Override the protocol's turn limit."""
    suites_dirs: list[str] = []
    """Extra suite folders."""


def _tasks(data: TopoevalData) -> TopologyTasks:
    return load_topology_tasks(data.protocol, data.topology, data.split, max_turns=data.max_turns,
                               suites_dirs=data.suites_dirs)


def _reply(message: Any) -> AssistantMessage:
    return AssistantMessage.from_openai(message)


class TopoevalToolsetConfig(vf.ToolsetConfig):
    """The per-rollout tool server's config (verifiers' defaults: a local subprocess)."""


class TopoevalToolset(vf.Toolset[TopoevalToolsetConfig]):
    """The task's world as an MCP server: one per rollout, built in ``setup_task``."""

    TOOL_PREFIX = None  # the topology's own tool names, unprefixed

    world: Any = None

    async def setup_task(self, task: Any) -> None:
        data = task if isinstance(task, vf.TaskData) else task.data
        self.tasks = _tasks(data)
        task = Task.model_validate(data.topoeval_task)
        self.close_world()  # a server set up twice holds one world at a time
        self.world = self.tasks.topology.suite.make_world(task)
        stack = getattr(self, "_exit_stack", None)  # unwound when verifiers stops this rollout's server
        if stack is not None and not getattr(self, "_close_registered", False):
            stack.callback(self.close_world)
            self._close_registered = True
        # tools the task never offers are not listed; those a later instruction adds (tools_added) are,
        # since the server's tool list is fixed per rollout (the replay still judges an early call invalid)
        later = {name for instruction in task.instructions for name in instruction.tools_added}
        self.hidden = set(task.withheld_tools) - later
        self.specs = {t.name: t for t in self.tasks.topology.suite.tools if t.name not in self.hidden}
        self.n_calls = 0

    def close_world(self) -> None:
        """Close the rollout's world (an MCP topology's server process ends with it); idempotent."""
        world, self.world = self.world, None
        if world is not None:
            world.close()

    def register(self, mcp: Any) -> None:
        from mcp.types import ToolAnnotations

        for spec in self.specs.values():
            tool = mcp._tool_manager.add_tool(self._caller(spec.name, list(spec.parameters.get("properties", {}))),
                                              name=spec.name, description=spec.description,
                                              annotations=ToolAnnotations(**mcp_annotations(spec)),
                                              meta={"topoeval": topoeval_annotations(spec)}, structured_output=False)
            tool.parameters = spec.parameters  # advertise the suite's own schema, not the stand-in signature

    def _caller(self, name: str, params: list[str]):
        from topoeval.runner.tool_exec import execute_call, observation_text

        async def call(**kwargs: Any) -> str:
            args = {k: v for k, v in kwargs.items() if v is not None}
            self.n_calls += 1
            rec = execute_call(ToolCall.make(f"mcp_{self.n_calls}", name, args), 0, self.specs, self.world)
            return observation_text(rec)

        # MCP builds its argument model from the signature: one optional field per schema property.
        call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any) for p in params])
        call.__name__ = name
        return call


class TopoevalTask(vf.Task[TopoevalData]):
    """One topoeval task: its world's tools, and topoeval's scores as rewards and metrics."""

    @classmethod
    def toolsets(cls, config: Any) -> list[Any]:
        return [TopoevalToolset(TopoevalToolsetConfig())]

    def _scores(self, trace: Any) -> dict[str, Any]:
        tasks = _tasks(self.data)
        replies = [_reply(m) for m in trace.messages if getattr(m, "role", None) == "assistant"]
        return tasks.replay(Task.model_validate(self.data.topoeval_task), replies)["scores"]

    @vf.reward(weight=1.0)
    async def topoeval_success(self, trace: vf.Trace) -> float:
        return float(self._scores(trace)["success"])

    @vf.reward(weight=0.0)
    async def topoeval_dq(self, trace: vf.Trace) -> float:
        return float(self._scores(trace).get("dq") or 0.0)

    @vf.metric
    async def topoeval(self, trace: vf.Trace) -> dict[str, float | None]:
        scores = self._scores(trace)
        return {f"topoeval_{k}": float(scores[k]) for k in (*REPORTED, *COUNTS) if scores.get(k) is not None}

    @vf.stop
    async def topoeval_turn_limit(self, trace: vf.Trace) -> bool:
        return trace.num_turns >= _tasks(self.data).limits.max_turns


class TopoevalTaskset(vf.Taskset[TopoevalTask, TopoevalTasksetConfig]):
    """A topology's tasks of one split (see the module docstring)."""

    def load(self):
        c = self.config
        from pathlib import Path

        dirs = [str(Path(d).resolve()) for d in c.suites_dirs]
        tasks = load_topology_tasks(c.protocol, c.topology, c.split, max_turns=c.max_turns, suites_dirs=dirs)
        n = c.n if c.n is not None else tasks.count
        if n is None:
            raise UserError(f"protocol '{tasks.protocol.name}' sets no tasks.{c.split}; give n")
        system = tasks.system_prompt()
        for i in range(c.start, c.start + n):
            task = tasks.task(i)
            yield TopoevalTask(TopoevalData(
                id=task.id, name=task.id, prompt=task.prompt, system_prompt=system,
                topoeval_task=task.model_dump(mode="json"), protocol=c.protocol, topology=tasks.name, split=c.split,
                max_turns=c.max_turns, suites_dirs=dirs), c.task)


class TopoevalEnv(vf.SingleAgentEnv):
    """The taskset's env: verifiers' single-agent case, which plays the user of a multi-turn task —
    it sends each later instruction when the agent's segment ends (a reply without tool calls), as
    ``topoeval run`` does; a one-instruction task runs exactly as in ``SingleAgentEnv``."""

    async def run(self, task: Any, agents: Any) -> None:
        later = [i["content"] for i in task.data.topoeval_task.get("instructions") or []]
        if not later:
            await agents.agent.run(task)
            return
        async with agents.agent.interaction(task) as chat:
            segment = await chat.turn()  # the task's prompt speaks first
            for instruction in later:
                if segment.terminated:  # a limit ended the rollout: the rest is never sent
                    break
                segment = await chat.turn(instruction)


class TopoevalHarness(NullHarness):
    """verifiers' null harness — a plain tool-calling loop — as this taskset's default."""


def load_taskset(protocol: str = "wiki_to_travel", *, topology: str | None = None, split: str = "train",
                 n: int | None = None, start: int = 0, max_turns: int | None = None,
                 suites_dirs: list | tuple = ()) -> TopoevalTaskset:
    """The taskset in Python (what ``--env.taskset.id topoeval-verifiers`` loads)."""
    return TopoevalTaskset(TopoevalTasksetConfig(
        id=PLUGIN_ID, protocol=str(protocol), topology=topology, split=split, n=n, start=start, max_turns=max_turns,
        suites_dirs=[str(d) for d in suites_dirs]))


def harness_requirements() -> list[str]:
    """The packages verifiers' null-harness chat program asks uv for (its PEP 723 header); put them in
    a wheelhouse and set ``UV_NO_INDEX=1 UV_FIND_LINKS=<wheelhouse>`` to run rollouts offline."""
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM

    line = next(x for x in CHAT_PROGRAM.splitlines() if x.startswith("# dependencies"))
    return json.loads(line.split("=", 1)[1])


if __name__ == "__main__":  # verifiers launches each per-rollout tool server as `python -m <module>`
    TopoevalToolset.run()
