"""Multi-turn rollouts for GRPO: the policy plays whole episodes in topoeval's own environment.

TRL's ``GRPOTrainer`` takes a ``rollout_func(prompts, trainer)``; this module's :class:`Rollouts`
is one. Each prompt of the batch (TRL repeats every task ``num_generations`` times: one group) is
a task of the train topology's train split, named by the ``task_index`` its system message
carries. For each, a :class:`~topoeval.training.env.TopologyEnv` is reset on that task and the
policy — the trainer's own model, LoRA included — writes assistant turns with Hugging Face
``generate`` (all live episodes of the batch in one padded batch per turn, sampled at the
configured temperature) until the episode ends (a turn without calls), a limit of the env is hit,
or the rollout's token budget is spent.

What the model reads is exactly the inference prompt (:func:`topoeval.models.llamacpp_template.inference_text`,
the ``topoeval-tools`` layout the shipped adapters are evaluated in): the model's own tokens are
kept as generated, and between turns the env's new messages (tool results, the next instruction)
are appended as the text the inference prompt adds for them. The completion handed back to TRL is
the whole episode after the first prompt, with ``env_mask`` 1 on the model's tokens and 0 on the
env's, so only the model's tokens carry the policy gradient.

The reward is the env's on the finished episode (:func:`topoeval.reward` metrics: ``success`` by
default). An episode cut by the token budget is scored as it stands. Per-rollout counts (tool
calls, invalid calls, redundant calls, turns, success, dq) go to the reward function as extra
fields and into the trainer's logged metrics (``episode/*``, ``tools/*``).

``logprobs`` are returned as zeros: TRL reads them only for vLLM's importance-sampling correction,
which this path does not use.
"""

from __future__ import annotations

import re
import time
from typing import Any

from topoeval.models.llamacpp_tools import CALL_PREFIX, END, MESSAGE_PREFIX, START

_CALL = re.compile(r"(?:^|\n)" + re.escape(CALL_PREFIX) + r"([A-Za-z0-9_.\-]+):[ \t]*\n?")
#: per-rollout counts logged each step (mean over the step's rollouts) and passed to the reward function
ROLLOUT_FIELDS = ("success", "dq", "tool_calls", "invalid_calls", "redundant_calls", "turns", "model_tokens")


def parse_turn(text: str, text_then_calls: bool = False) -> dict[str, Any]:
    """An OpenAI assistant message from a turn the model wrote in the ``topoeval-tools`` layout
    (``message:`` + text, or ``functions.<name>:`` + a JSON line, one or more; with ``text_then_calls``,
    as inference allows a rationale adapter, a message's text may be followed by calls). Nothing raises:
    bad JSON stays the call's arguments, which the env records as an invalid call."""
    text = text.strip()
    content = None
    if text_then_calls and text.startswith(MESSAGE_PREFIX.strip()):
        first = _CALL.search(text)
        if first is not None and first.start() > 0:
            content = text[len(MESSAGE_PREFIX.strip()):first.start()].strip() or None
            text = text[first.start():].strip()
    if text.startswith(CALL_PREFIX):
        matches = list(_CALL.finditer(text))
        calls = []
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            calls.append({"id": f"call_{i}", "type": "function",
                          "function": {"name": m.group(1), "arguments": text[m.end():end].strip() or "{}"}})
        if calls:
            return {"role": "assistant", "content": content, "tool_calls": calls}
    if text.startswith(MESSAGE_PREFIX.strip()):
        text = text[len(MESSAGE_PREFIX.strip()):].strip()
    return {"role": "assistant", "content": text}


class _Episode:
    """One rollout in progress: its env, its tokens and which of them the model wrote."""

    def __init__(self, env: Any, prompt_ids: list[int], text: str):
        self.env = env
        self.prompt_ids = prompt_ids
        self.ids: list[int] = []  # completion tokens (model and env)
        self.mask: list[int] = []  # 1 = written by the model
        self.text = text  # the inference prompt so far (ends with the generation prompt)
        self.done = False
        self.reward = 0.0
        self.scores: dict[str, Any] = {}

    def context(self) -> list[int]:
        return self.prompt_ids + self.ids


class Rollouts:
    """A TRL ``rollout_func`` over one topology's train split (see the module docstring)."""

    def __init__(self, topology: Any, *, task_seed: int, n_tasks: int, max_turns: int, max_tool_calls: int,
                 turn_tokens: int, max_completion_tokens: int, temperature: float, top_p: float,
                 reward: str | dict[str, float] = "success", text_then_calls: bool = False):
        self.topology = topology
        self.task_seed, self.n_tasks = task_seed, n_tasks
        self.max_turns, self.max_tool_calls = max_turns, max_tool_calls
        self.turn_tokens, self.max_completion_tokens = turn_tokens, max_completion_tokens
        self.temperature, self.top_p, self.reward = temperature, top_p, reward
        #: turns may write text before their calls (an init adapter trained on rationale rows)
        self.text_then_calls = text_then_calls
        #: the last call's per-rollout rows (for tests and the progress line)
        self.last: list[dict[str, Any]] = []

    def _env(self) -> Any:
        from topoeval.training.env import TopologyEnv

        return TopologyEnv(self.topology, split="train", task_seed=self.task_seed, n_tasks=self.n_tasks,
                           max_turns=self.max_turns, max_tool_calls=self.max_tool_calls, reward=self.reward)

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, Any]:
        from topoeval.models.llamacpp_template import inference_text

        tok = trainer.processing_class
        started = time.perf_counter()
        episodes = []
        for prompt in prompts:
            env = self._env()
            _, info = env.reset(seed=int(prompt[0]["task_index"]))
            text = inference_text(info["messages"], info["tools"])
            episodes.append(_Episode(env, tok(text, add_special_tokens=False)["input_ids"], text))
        try:
            while live := [e for e in episodes if not e.done]:
                for episode, turn in zip(live, self._generate(trainer, [e.context() for e in live]), strict=True):
                    self._advance(episode, turn, tok, inference_text)
        finally:
            for e in episodes:
                e.env.close()
        rows = [self._row(e) for e in episodes]
        self.last = rows
        metrics = getattr(trainer, "_metrics", None)
        if metrics is not None:
            mode = "train" if trainer.model.training else "eval"
            for key in ROLLOUT_FIELDS:
                group = "tools" if key.endswith("calls") else "episode"
                metrics[mode][f"{group}/{key}"].append(sum(r[key] for r in rows) / len(rows))
            metrics[mode]["timing/rollout_s"].append(time.perf_counter() - started)
        out: dict[str, Any] = {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.ids for e in episodes],
            "logprobs": [[0.0] * len(e.ids) for e in episodes],
            "env_mask": [e.mask for e in episodes],
            "episode_reward": [e.reward for e in episodes],
        }
        for key in ROLLOUT_FIELDS:
            out[f"episode_{key}"] = [r[key] for r in rows]
        return out

    def _generate(self, trainer: Any, contexts: list[list[int]]) -> list[list[int]]:
        """One assistant turn for each context (left-padded batch), each cut after its ``<|im_end|>``."""
        import torch

        tok = trainer.processing_class
        end_id = tok.convert_tokens_to_ids(END)
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else end_id
        width = max(map(len, contexts))
        ids = torch.tensor([[pad_id] * (width - len(c)) + c for c in contexts])
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        model = trainer.accelerator.unwrap_model(trainer.model) if hasattr(trainer, "accelerator") else trainer.model
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                sample = self.temperature > 0
                out = model.generate(input_ids=ids, attention_mask=attention, max_new_tokens=self.turn_tokens,
                                     do_sample=sample, temperature=self.temperature if sample else None,
                                     top_p=self.top_p if sample else None, top_k=0 if sample else None,
                                     eos_token_id=end_id, pad_token_id=pad_id)
        finally:
            model.train(was_training)
        turns = []
        for row in out[:, width:].tolist():
            turns.append(row[:row.index(end_id) + 1] if end_id in row else row)
        return turns

    def _advance(self, e: _Episode, turn: list[int], tok: Any, inference_text: Any) -> None:
        """Step ``e``'s env with the model's turn; append the env's reply tokens or finish the episode."""
        end_id = tok.convert_tokens_to_ids(END)
        e.ids += turn
        e.mask += [1] * len(turn)
        closed = bool(turn) and turn[-1] == end_id
        written = tok.decode(turn[:-1] if closed else turn, skip_special_tokens=True)
        _, reward, terminated, truncated, info = e.env.step(parse_turn(written, self.text_then_calls))
        if terminated or truncated:
            return self._finish(e, reward, info["scores"])
        if not closed:  # the turn ran out of tokens: the prompt closes it as inference does
            e.ids.append(end_id)
            e.mask.append(0)
        prefix = inference_text(info["messages"][:_last_assistant(info["messages"]) + 1], info["tools"])
        prefix = prefix[:-len(START + "assistant\n")]  # ends with the assistant turn's END + "\n"
        text = inference_text(info["messages"], info["tools"])
        budget = self.max_completion_tokens - sum(e.mask)
        if not text.startswith(prefix) or budget <= 0:  # offered tools changed the system turn, or no budget
            return self._finish(e, *self._score_now(e))
        reply = tok("\n" + text[len(prefix):], add_special_tokens=False)["input_ids"]
        e.ids += reply
        e.mask += [0] * len(reply)
        e.text = text

    def _score_now(self, e: _Episode) -> tuple[float, dict[str, Any]]:
        """Score an episode the rollout stops before the env ends it (as it stands)."""
        from topoeval.training.rewards import combine

        record = e.env.state.record()
        return combine(record["scores"], self.reward), record["scores"]

    @staticmethod
    def _finish(e: _Episode, reward: float, scores: dict[str, Any]) -> None:
        e.done, e.reward, e.scores = True, float(reward), scores

    @staticmethod
    def _row(e: _Episode) -> dict[str, Any]:
        s = e.scores
        return {"success": float(s.get("success") or 0.0), "dq": float(s.get("dq") or 0.0),
                "tool_calls": s.get("tool_calls", 0), "invalid_calls": s.get("invalid_calls", 0),
                "redundant_calls": s.get("redundant_calls") or 0, "turns": s.get("turns", 0),
                "model_tokens": sum(e.mask), "reward": e.reward}


def _last_assistant(messages: list[dict[str, Any]]) -> int:
    return max(i for i, m in enumerate(messages) if m["role"] == "assistant")
