"""topoeval episodes as a SkyRL text environment (extra ``topoeval[skyrl]``: ``skyrl-gym==0.4.0``; docs/verl-skyrl.md).

Importing this module registers :class:`TopoevalTextEnv` with skyrl-gym as ``topoeval``; rows of
``topoeval export PROTOCOL --for skyrl`` name it (``env_class: topoeval``) and carry the task in
their extras (``extra_info``). SkyRL builds the env as ``skyrl_gym.make("topoeval", env_config=...,
extras=row_extras)``:

- ``init(prompt)`` returns the episode's opening messages (system prompt with the tools in the row's
  tool-call format, the task's user turn) and metadata (task id, topology, format);
- ``step(action)`` reads the model's text in that format, steps topoeval's world (tools, the simulated
  user, irreversible actions; a malformed call is a recorded invalid call answered with an error) and
  returns ``BaseTextEnvStepOutput(observations, reward, done, metadata)``: observations are user
  turns (tool results as the format renders them, the traveller's answers, a multi-turn task's next
  instruction); ``reward`` is 0 until ``done``, then topoeval's reward (the row's metric), with every
  score in ``metadata["scores"]``;
- ``get_metrics()`` gives the episode's scores and counts (``topoeval/...``) for SkyRL's logs.

SkyRL's env API passes no tool list to the chat template, so the ``native`` format is refused here:
use a prompt format (``hermes``, the default, or ``search-r1``, ``react``, ``json``).
"""

from __future__ import annotations

from typing import Any

from topoeval.core.errors import UserError
from topoeval.integrations.text_episode import TextEpisode

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError:
    raise UserError("topoeval.integrations.skyrl needs the 'skyrl' extra (skyrl-gym==0.4.0): "
                    "pip install 'topoeval[skyrl]'") from None

__all__ = ["ENV_ID", "TopoevalTextEnv"]

ENV_ID = "topoeval"


class TopoevalTextEnv(BaseTextEnv):
    """One topoeval episode per env (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        extras = extras or {}
        self.episode = TextEpisode.from_row(extras.get("extra_info", extras))
        if self.episode.format.native:
            self.episode.close()
            raise UserError("SkyRL's text env cannot hand tools to the chat template: export with a prompt "
                            "format (hermes, search-r1, react, json), not native")
        self.max_turns = self.episode.state.limits.max_turns
        self._final: dict[str, Any] | None = None

    def init(self, prompt: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        ep = self.episode
        meta = {"task_id": ep.task.id, "topology": ep.topology.name, "tool_format": ep.format.name}
        return ep.prompt_messages(), meta

    def step(self, action: str) -> BaseTextEnvStepOutput:
        ep = self.episode
        if ep.done:  # SkyRL stepped past the end: nothing more happens
            return BaseTextEnvStepOutput(observations=[], reward=0.0, done=True, metadata={"status": ep.state.status})
        observations = ep.step_text(action or "")
        self.turns = ep.turns
        if not ep.done:
            return BaseTextEnvStepOutput(observations=observations, reward=0.0, done=False,
                                         metadata={"turn": ep.turns, "status": "running"})
        scores = ep.scores()
        reward = ep.reward(scores)
        self._final = {**ep.metrics(scores), "topoeval/reward": reward}
        ep.close()
        return BaseTextEnvStepOutput(observations=[], reward=reward, done=True,
                                     metadata={"turn": ep.turns, "status": ep.state.status, "scores": scores})

    def get_metrics(self) -> dict[str, Any]:
        if self._final is None:
            return self.episode.metrics()
        return dict(self._final)

    def close(self) -> None:
        self.episode.close()


if ENV_ID not in skyrl_gym.registry:
    skyrl_gym.register(id=ENV_ID, entry_point="topoeval.integrations.skyrl:TopoevalTextEnv")
