"""A verifiers environment over a topoeval topology, scored by topoeval's own metrics.

::

    import topoeval.integrations.verifiers as tv
    env = tv.load_environment("wiki_to_travel", split="train")       # the protocol's train topology
    results = env.evaluate_sync(client=vf.ClientConfig(api_base_url=...), model="...")

``load_environment(protocol, split, ...)`` returns a multi-turn tool environment (verifiers'
classic ``MultiTurnEnv`` API: ``verifiers>=0.3,<0.4``, the ``verifiers`` extra). Its dataset is
``topoeval export``'s rows; each rollout owns a topoeval :class:`EpisodeState`, so tool calls run
against the task's world exactly as in an evaluation (malformed calls become error observations)
and the rubric's reward is the evaluation's score — ``success`` by default, ``dq`` or a weighted mix
via ``metric`` — with ``topoeval_success`` and ``topoeval_dq`` logged at weight 0. Every score
(each dimension, ``None`` where it does not apply) is kept in ``state["topoeval_scores"]``; ask
for it with ``state_columns=["topoeval_scores"]``.

verifiers 0.4 replaced that API with its v1 taskset/harness stack; this adapter needs the classic
one and says so when it is missing.
"""

from __future__ import annotations

from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.protocol.schema import Limits
from topoeval.training.rewards import combine
from topoeval.runner.episode import EpisodeState
from topoeval.core.suite import Task

#: Logged as rubric metrics at weight 0. verifiers multiplies every metric by its weight, so a
#: dimension that may be undefined (None) cannot be one: all scores are in state["topoeval_scores"].
LOGGED = ("success", "dq")


def _verifiers():
    try:
        import verifiers as vf
    except ImportError:
        raise UserError("topoeval.integrations.verifiers needs the 'verifiers' extra: "
                        "pip install 'topoeval[verifiers]'") from None
    if not hasattr(vf, "MultiTurnEnv"):
        raise UserError(f"verifiers {getattr(vf, '__version__', '?')} has no MultiTurnEnv (its v1 stack replaced it); "
                        "this adapter needs verifiers>=0.3,<0.4")
    return vf


def _content(message: Any) -> str | None:
    content = getattr(message, "content", None)
    if content is None or isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)


def _reply(message: Any) -> AssistantMessage:
    """A verifiers assistant message as topoeval's."""
    calls = [ToolCall(id=c.id or f"call_{i}", name=c.name or "", arguments=c.arguments or "{}")
             for i, c in enumerate(getattr(message, "tool_calls", None) or [])]
    return AssistantMessage(content=_content(message), tool_calls=calls)


def load_environment(protocol: str = "wiki_to_travel", split: str = "train", *, n: int | None = None,
                     topology: str | None = None, metric: str | dict[str, float] = "success",
                     max_turns: int | None = None, suites_dirs: list | tuple = ()) -> Any:
    """A verifiers ``MultiTurnEnv`` over the protocol's train topology (or ``topology``), ``split``."""
    vf = _verifiers()
    from datasets import Dataset
    from verifiers.types import ToolMessage

    from topoeval.training.export import select_tasks

    sel = select_tasks(protocol, split=split, n=n, topology=topology, suites_dirs=suites_dirs)
    proto, topo, rows = sel.protocol, sel.topology, sel.rows()
    dataset = Dataset.from_list([{k: r[k] for k in ("id", "prompt", "answer", "info")} for r in rows])
    limits = Limits(max_turns=max_turns or proto.limits.max_turns, max_tool_calls=proto.limits.max_tool_calls)
    tool_defs = [vf.Tool(name=t.name, description=t.description, parameters=t.parameters) for t in topo.suite.tools]

    def episode(state: Any) -> EpisodeState:
        if "topoeval" not in state:
            task = Task.model_validate(state["info"]["topoeval_task"])
            state["topoeval"] = EpisodeState(topo.suite, task, topo.system_prompt(), [], limits)
        return state["topoeval"]

    def scores(state: Any) -> dict[str, Any]:
        """The episode's scores, once every assistant message of the rollout has reached the world."""
        if "topoeval_scores" not in state:
            ep = episode(state)
            replies = [m for step in state.get("trajectory", []) for m in step["completion"]
                       if getattr(m, "role", None) == "assistant"]
            for message in replies[ep.turns:]:  # the last turn's calls, or the final answer
                if ep.done:
                    break
                ep.step(_reply(message))
            state["topoeval_scores"] = ep.record()["scores"]
        return state["topoeval_scores"]

    class TopoevalEnv(vf.MultiTurnEnv):
        """One topoeval topology as a verifiers tool environment."""

        async def setup_state(self, state: Any) -> Any:
            episode(state)
            return state

        @vf.stop
        async def episode_over(self, state: Any) -> bool:
            trajectory = state.get("trajectory") or []
            if not trajectory:
                return False
            last = trajectory[-1]["completion"][-1]
            return getattr(last, "role", None) == "assistant" and not getattr(last, "tool_calls", None)

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> list[Any]:
            results = episode(state).step(_reply(messages[-1]))
            return [ToolMessage(role="tool", tool_call_id=m["tool_call_id"], content=m["content"]) for m in results]

    async def topoeval_reward(state: Any, **kwargs: Any) -> float:
        return combine(scores(state), metric)

    rubric = vf.Rubric(funcs=[topoeval_reward], weights=[1.0])
    for name in LOGGED:
        async def logged(state: Any, _name: str = name, **kwargs: Any) -> float:
            return float(scores(state).get(_name) or 0.0)

        logged.__name__ = f"topoeval_{name}"
        rubric.add_metric(logged)
    return TopoevalEnv(dataset=dataset, eval_dataset=dataset, rubric=rubric, tool_defs=tool_defs,
                       max_turns=limits.max_turns, env_id=f"topoeval/{proto.name}/{topo.name}")
