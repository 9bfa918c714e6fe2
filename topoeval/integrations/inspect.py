"""An inspect_ai task over a topoeval topology (extra ``topoeval[inspect]``: ``inspect-ai>=0.3.285,<0.4``).

::

    from inspect_ai import eval
    from topoeval.integrations.inspect import topoeval_task
    eval(topoeval_task("wiki_to_travel", topology="travel", split="test", n=20), model="openai/gpt-4o-mini")

or ``inspect eval topoeval/integrations/inspect.py@topoeval_task -T topology=travel -T n=20``.

- Samples: the split's tasks (the tasks ``topoeval run`` draws at those positions), each input the
  topology's system prompt and the task's user message; the task itself rides in the metadata.
- Solver: builds the task's world per sample and sets ``state.tools`` from ``ToolDef`` s (the
  suite's JSON schemas; ``parallel=`` is the tool's ``parallel_safe``), then generates turn by turn
  (``tool_calls="single"``) until a reply without calls or the protocol's ``max_turns``; the world is
  closed when the sample ends, as is the scorer's replay world (an MCP server process each). inspect
  insists on a description per parameter: where a suite gives none, the parameter's name stands in.
- Scorer: replays the conversation's assistant messages against a fresh world of the task, so the
  value — ``success``, ``dq`` and each decision-quality dimension (NaN where one does not apply:
  inspect's "unscored" marker) — equals ``topoeval run``'s for the same messages. Each is averaged
  over the samples where it applies, as in topoeval's summaries; every score (``None`` where it
  does not apply) is in the score's metadata.
"""

from __future__ import annotations

import json
import math
from typing import Any, cast

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.core.suite import Task as TopoevalTaskModel
from topoeval.core.suite import ToolSpec, World
from topoeval.integrations.topology_tasks import REPORTED, TopologyTasks, load_topology_tasks

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser
    from inspect_ai.scorer import Metric, SampleScore, Score, Target, metric, scorer
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.tool import ToolDef, ToolParams
except ImportError:
    raise UserError(
        "topoeval.integrations.inspect needs the 'inspect' extra: pip install 'topoeval[inspect]'") from None


@metric
def applicable_mean() -> Metric:
    """The mean over the samples whose value is not ``None`` (a dimension's cell mean in topoeval);
    NaN when it applied to none."""

    def compute(scores: list[SampleScore]) -> float:
        values = [v for s in scores if not math.isnan(v := float(cast(float, s.score.value)))]
        return sum(values) / len(values) if values else float("nan")

    return compute


def _tool(spec: ToolSpec, world: World, specs: dict[str, ToolSpec], counter: list[int]) -> Any:
    from topoeval.runner.tool_exec import execute_call, observation_text

    async def execute(**kwargs: Any) -> str:
        counter[0] += 1
        rec = execute_call(ToolCall.make(f"inspect_{counter[0]}", spec.name, kwargs), 0, specs, world)
        return observation_text(rec)

    params = ToolParams.model_validate(spec.parameters)
    for name, param in params.properties.items():  # inspect insists on a description per parameter
        param.description = param.description or name.replace("_", " ")
    return ToolDef(execute, name=spec.name, description=spec.description, parameters=params,
                   parallel=spec.parallel_safe).as_tool()


def _reply(message: Any) -> AssistantMessage:
    """An inspect assistant message as topoeval's (arguments re-serialised from inspect's parsed dict)."""
    calls = [ToolCall(id=c.id or f"call_{i}", name=c.function,
                      arguments=json.dumps(c.arguments, ensure_ascii=False) if c.parse_error is None else "")
             for i, c in enumerate(message.tool_calls or [])]
    return AssistantMessage(content=message.text or None, tool_calls=calls)


def _where(protocol: str, topology: str | None, split: str, max_turns: int | None,
           suites_dirs: list[str] | None) -> TopologyTasks:
    return load_topology_tasks(protocol, topology, split, max_turns=max_turns, suites_dirs=tuple(suites_dirs or ()))


@solver
def topoeval_agent(protocol: str, topology: str | None = None, split: str = "test", max_turns: int | None = None,
                   suites_dirs: list[str] | None = None):
    """The task's world as tools, then one generation per turn up to the protocol's ``max_turns``."""
    tasks = _where(protocol, topology, split, max_turns, suites_dirs)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = TopoevalTaskModel.model_validate(state.metadata["topoeval_task"])
        suite = tasks.topology.suite
        world, specs, counter = suite.make_world(task), {t.name: t for t in suite.tools}, [0]
        state.tools = [_tool(spec, world, specs, counter) for spec in suite.tools]
        try:
            for _ in range(tasks.limits.max_turns):
                state = await generate(state, tool_calls="single")
                if not state.output.message.tool_calls:
                    break
        finally:
            world.close()  # an MCP world's server process ends with the sample
        return state

    return solve


@scorer(metrics={name: [applicable_mean()] for name in REPORTED})
def topoeval_scorer(protocol: str, topology: str | None = None, split: str = "test", max_turns: int | None = None,
                    suites_dirs: list[str] | None = None):
    """topoeval's own scores of the conversation (see the module docstring)."""
    tasks = _where(protocol, topology, split, max_turns, suites_dirs)

    async def score(state: TaskState, target: Target) -> Score:
        task = TopoevalTaskModel.model_validate(state.metadata["topoeval_task"])
        replies = [_reply(m) for m in state.messages if m.role == "assistant"]
        record = tasks.replay(task, replies)
        scores = record["scores"]
        value = {name: float("nan") if scores.get(name) is None else float(scores[name]) for name in REPORTED}
        return Score(value=value, answer=record["final_answer"],
                     explanation=f"status {record['status']}", metadata={"scores": scores})

    return score


@task
def topoeval_task(protocol: str = "wiki_to_travel", topology: str | None = None, split: str = "test",
                  n: int | None = None, start: int = 0, max_turns: int | None = None,
                  suites_dirs: list[str] | None = None) -> Task:
    """``n`` tasks (default: the protocol's count for the split) of ``split`` of the protocol's
    ``topology`` (default: its train topology), from index ``start``, as an inspect ``Task``."""
    tasks = _where(protocol, topology, split, max_turns, suites_dirs)
    n = n if n is not None else tasks.count
    if n is None:
        raise UserError(f"protocol '{tasks.protocol.name}' sets no tasks.{split}; give n")
    system = tasks.system_prompt()
    samples = []
    for i in range(start, start + n):
        t = tasks.task(i)
        samples.append(Sample(id=t.id, input=[ChatMessageSystem(content=system), ChatMessageUser(content=t.prompt)],
                              target=t.answer if t.answer is not None else "",
                              metadata={"topoeval_task": t.model_dump(mode="json"), "index": i}))
    name = f"topoeval_{tasks.protocol.name}_{tasks.name}_{split}"
    where: dict[str, Any] = {"protocol": str(protocol), "topology": tasks.name, "split": split, "max_turns": max_turns,
             "suites_dirs": list(suites_dirs or [])}
    return Task(dataset=MemoryDataset(samples, name=name), solver=topoeval_agent(**where),
                scorer=topoeval_scorer(**where), name=name)
