"""A Gymnasium-style environment over any topology, for online RL loops.

::

    env = topoeval.make_env("travel")                      # or a protocol's topology, or a spec dict
    observation, info = env.reset(seed=3)                  # task 3 of the split; info["tools"]
    observation, reward, terminated, truncated, info = env.step(assistant_message)

Observations are text (the new messages rendered one per block); the full OpenAI message list is in
``info["messages"]`` and the tool specs (OpenAI format) in ``info["tools"]``. An action is an assistant message: an
OpenAI-format dict (``content``, ``tool_calls``), an :class:`~topoeval.core.messages.AssistantMessage`, or a string
whose ``<tool_call>{...}</tool_call>`` blocks are its calls (the prompt-tools format of
:mod:`topoeval.models.prompt_tools`). The episode terminates on a message without tool calls — on a multi-turn task,
on the one that answers the last user instruction: earlier ones bring the next instruction as the observation, and
``info["tools"]`` follows what the task offers by then — and is truncated at ``max_turns`` (or ``max_tool_calls``);
either way the final step's reward is the episode's score (``success`` by default; see :func:`topoeval.reward`) and
``info["scores"]`` holds every metric. Malformed calls become error observations, never exceptions.

With ``gymnasium`` installed the class is a real ``gymnasium.Env`` (``Text`` spaces) registered as
``topoeval/Topology-v0``; without it the same methods work.
"""

from __future__ import annotations

from typing import Any

from topoeval.core.suite import Split
from topoeval.protocol.schema import Limits
from topoeval.protocol.topology import ResolvedTopology, topology_from
from topoeval.runner.episode import EpisodeState
from topoeval.training.actions import as_assistant_message
from topoeval.training.rewards import combine

try:  # optional: a real gymnasium.Env when gymnasium is installed
    import gymnasium as _gym
    from gymnasium import spaces as _spaces

    _Base: type = _gym.Env
except ImportError:  # pragma: no cover - exercised where gymnasium is absent
    _gym = None  # type: ignore[assignment]
    _Base = object

MAX_TEXT = 1_000_000


def render(messages: list[dict[str, Any]]) -> str:
    """Messages as text blocks: ``[role]`` (``[tool name]`` for results) then the content."""
    blocks = []
    for m in messages:
        label = f"tool {m.get('name', '')}".strip() if m["role"] == "tool" else m["role"]
        blocks.append(f"[{label}]\n{m.get('content') or ''}")
    return "\n\n".join(blocks)


class TopologyEnv(_Base):
    """One topology's tasks as an episodic environment (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, topology: Any, *, protocol: Any = None, split: Split = "train", task_seed: int = 0,
                 n_tasks: int = 1000, max_turns: int = 12, max_tool_calls: int = 24,
                 reward: str | dict[str, float] = "success", suites_dirs: list | tuple = ()):
        self.topology: ResolvedTopology = topology_from(topology, protocol, suites_dirs)
        self.split, self.task_seed, self.n_tasks = split, task_seed, n_tasks
        self.limits = Limits(max_turns=max_turns, max_tool_calls=max_tool_calls)
        self.reward_spec = reward
        self.tools = [t.openai() for t in self.topology.suite.tools]
        self._next_index = 0
        self.state: EpisodeState | None = None
        if _gym is not None:
            self.observation_space = _spaces.Text(max_length=MAX_TEXT)
            self.action_space = _spaces.Text(max_length=MAX_TEXT)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start the task at index ``seed`` of the split (or the next one); ``options["task"]`` may give a Task."""
        if seed is None:
            index, self._next_index = self._next_index, self._next_index + 1
        else:
            index = seed
        task = (options or {}).get("task") or self.topology.suite.generate(
            self.topology.params, self.split, self.task_seed, index % self.n_tasks)
        self.close()
        self.state = EpisodeState(self.topology.suite, task, self.topology.system_prompt(), [], self.limits)
        return render(self.state.messages), self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        if self.state.done:
            raise RuntimeError("the episode is over; call reset()")
        results = self.state.step(as_assistant_message(action))
        terminated = self.state.status == "done"  # the agent ended the episode
        truncated = not terminated and self.state.done  # a turn or tool-call limit ended it
        info = self._info()
        reward = 0.0
        if terminated or truncated:
            record = self.state.record()
            self.state.close()
            info["scores"], info["record"] = record["scores"], record
            reward = combine(record["scores"], self.reward_spec)
        return render(results), reward, terminated, truncated, info

    def close(self) -> None:
        """Release the current episode's world (servers, scratch folders)."""
        if self.state is not None:
            self.state.close()

    def _info(self) -> dict[str, Any]:
        assert self.state is not None
        return {"task_id": self.state.task.id, "topology": self.topology.name, "tools": self.state.tools,
                "messages": list(self.state.messages), "turn": self.state.turns}


def make_env(topology: Any, **kwargs: Any) -> TopologyEnv:
    """A :class:`TopologyEnv` over ``topology`` (a suite name, a spec dict, or a protocol's topology
    name with ``protocol=``); keyword arguments as in :class:`TopologyEnv`."""
    return TopologyEnv(topology, **kwargs)


if _gym is not None and "topoeval/Topology-v0" not in _gym.registry:
    _gym.register(id="topoeval/Topology-v0", entry_point="topoeval.training.env:TopologyEnv")
