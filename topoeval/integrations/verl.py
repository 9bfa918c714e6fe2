"""topoeval episodes inside verl's agent loop (extra ``topoeval[verl]``: ``verl==0.9.1``; docs/verl.md).

``TopoevalAgentLoop`` is a verl ``AgentLoopBase`` registered as ``topoeval`` (``@register`` and the
shipped :data:`AGENT_LOOPS_YAML`, for ``actor_rollout_ref.rollout.agent.agent_loop_config_path``). A
row of ``topoeval export PROTOCOL --for verl`` (``agent_name: topoeval``) plays one whole episode:

- the opening messages (system prompt with the tools in the row's tool-call format, the task's user
  turn) go through the tokenizer's chat template once, with verl's own Continuous Token builder;
- each turn is generated token-in/token-out by verl's ``server_manager.generate``, its text parsed by
  topoeval (:class:`~topoeval.integrations.text_episode.TextEpisode`), topoeval's world stepped (tools, the
  simulated user, irreversible actions), and the tool results / user turns appended as token ids —
  the history is never re-tokenised;
- ``response_mask`` is 1 on the policy's tokens and 0 on tool and user turns (and on any boundary
  token the chat template inserts); the episode stops at its turn limit, at verl's
  ``multi_turn.max_assistant_turns``, or when ``rollout.response_length`` is spent (the episode is
  then scored as it stands, ``topoeval/truncated`` = 1);
- ``reward_score`` is topoeval's reward (the row's metric: ``success``, ``dq`` or a mix), so verl
  skips its own reward step; every score and count is in ``extra_fields`` (``topoeval/<name>``;
  a decision-quality dimension is absent where it does not apply), and ``reward_extra_info`` holds
  the same keys on every row (``topoeval_reward``, ``_success``, ``_dq``, ``_tool_calls``,
  ``_invalid_calls``, ``_turns``, ``_truncated``), which verl's validation reports per
  ``data_source`` — per topology: ``val-aux/travel/topoeval_success/mean@1``.

:func:`compute_score` is the fallback for ``reward.custom_reward_function``: it replays the decoded
response text on the row's task (a single-turn reading, for loops that are not this one).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from uuid import uuid4

from topoeval.core.errors import UserError
from topoeval.integrations.text_episode import TextEpisode

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register
except ImportError:
    raise UserError("topoeval.integrations.verl needs the 'verl' extra (verl==0.9.1 with torch): "
                    "pip install 'topoeval[verl]'") from None

__all__ = ["AGENT_LOOPS_YAML", "AGENT_NAME", "TopoevalAgentLoop", "compute_score"]

AGENT_NAME = "topoeval"
#: The agent-loop config verl's worker loads (``agent_loop_config_path``): ``- name: topoeval``.
AGENT_LOOPS_YAML = Path(__file__).with_name("agent_loops.yaml")


@register(AGENT_NAME)
class TopoevalAgentLoop(AgentLoopBase):
    """One topoeval episode per row, token-in/token-out (see the module docstring)."""

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)  # verl's tool registry (tools) is unused: the world brings its own
        self.response_length = int(self.rollout_config.response_length)
        multi_turn = self.rollout_config.get("multi_turn", None) or {}
        self.max_assistant_turns = multi_turn.get("max_assistant_turns", None)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        episode = TextEpisode.from_row(kwargs.get("extra_info"))
        try:
            return await self._play(episode, sampling_params)
        finally:
            episode.close()

    async def _play(self, episode: TextEpisode, sampling_params: dict[str, Any]) -> AgentLoopOutput:
        tools = episode.template_tools()
        messages = episode.prompt_messages()
        prompt_ids = await self.ct_build_initial_tokens(messages, tools=tools)
        tokens = list(prompt_ids)
        mask: list[int] = []
        logprobs: list[float] = []  # filled only when the server returns log-probs
        request_id = uuid4().hex
        turns = {"assistant": 0, "user": 0}
        generate_s = 0.0
        while not episode.done:
            budget = self.response_length - len(mask)
            if budget <= 0 or (self.max_assistant_turns and turns["assistant"] >= self.max_assistant_turns):
                episode.truncate()
                break
            started = time.perf_counter()
            out = await self.server_manager.generate(request_id=request_id, prompt_ids=tokens,
                                                     sampling_params={**sampling_params, "max_tokens": budget})
            generate_s += time.perf_counter() - started
            merged, mask, aligned = await self.ct_merge_assistant_token(
                tokens, out.token_ids, mask, logprobs if (logprobs or out.log_probs) else None,
                assistant_logprobs=out.log_probs or None)
            tokens, logprobs = merged.token_ids, aligned or logprobs
            turns["assistant"] += 1
            text = self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
            new = episode.step_text(text, completion_tokens=len(out.token_ids))
            if episode.done:
                break
            previous = [*messages, {"role": "assistant", "content": text}]
            messages = previous + new
            merged, new_mask, new_logprobs = await self.ct_merge_context_msg(previous, messages, tokens, mask,
                                                                             logprobs or None, tools=tools)
            if len(new_mask) >= self.response_length:  # no room left to answer the observation
                episode.truncate()
                break
            tokens, mask, logprobs = merged.token_ids, new_mask, new_logprobs or logprobs
            turns["user"] += 1
        scores = episode.scores()
        reward = episode.reward(scores)
        n_response = len(mask)
        response_ids = tokens[len(tokens) - n_response:] if n_response else []
        return AgentLoopOutput(
            prompt_ids=tokens[: len(tokens) - n_response],
            response_ids=response_ids[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=reward,
            num_turns=1 + turns["assistant"] + turns["user"],
            metrics=AgentLoopMetrics(generate_sequences=generate_s),
            extra_fields={**episode.metrics(scores), "topoeval/reward": reward,
                          "reward_extra_info": episode.summary(scores)},
        )


def compute_score(data_source: str, solution_str: str, ground_truth: Any = None, extra_info: Any = None,
                  **_: Any) -> dict[str, Any]:
    """verl's ``custom_reward_function`` signature: the decoded response replayed on the row's task.

    The response is read as one turn of the row's format (its calls run, then the episode ends), so
    this scores single-turn rollouts; multi-turn rollouts should use :class:`TopoevalAgentLoop`, whose
    ``reward_score`` verl uses directly. Returns ``{"score": reward, ...scores}``."""
    episode = TextEpisode.from_row(extra_info)
    try:
        episode.step_text(solution_str)
        episode.truncate()  # one turn only: the rest of the episode never happened
        scores = episode.scores()
        return {"score": episode.reward(scores), **{k.split("/", 1)[1]: v for k, v in episode.metrics(scores).items()}}
    finally:
        episode.close()
