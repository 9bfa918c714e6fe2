"""One topoeval episode played as text: the core that the verl agent loop and the SkyRL env share.

Token-in/token-out trainers hand an environment the model's raw text of one turn and want text
(chat messages) back. :class:`TextEpisode` does that over topoeval's own :class:`EpisodeState`:

::

    ep = TextEpisode.from_row(row["extra_info"])          # a `topoeval export --for verl|skyrl` row
    messages = ep.prompt_messages()                       # system (+ tools in the row's format) + user
    new = ep.step_text(model_text)                        # tool results / the next instruction, as messages
    ...
    ep.done, ep.reward(), ep.scores(), ep.metrics()

- The prompt is rendered in the row's tool-call format (:mod:`topoeval.formats`: ``hermes``,
  ``search-r1``, ``react``, ``json``; ``native`` leaves the tools to the tokenizer's chat template,
  :meth:`template_tools`, and reads calls as ``<tool_call>`` blocks, the Hermes/Qwen convention), exactly
  as ``topoeval run --tool-format F`` sends it, so a checkpoint trained here is evaluated in what it saw.
- A turn's text is parsed with the same format. A malformed call (bad JSON, unknown tool, arguments
  outside the schema) is an invalid call recorded in the episode, answered with an error observation
  the model reads; nothing the model writes raises.
- Tool results come back as the format renders them (one user turn per assistant turn in the
  prompt formats, ``tool`` messages in ``native``). The simulated user — the traveller answering
  ``ask_user``, confirming or refusing an irreversible action — answers through that same channel, in
  a user turn; a multi-turn task's next instruction is a plain user message. Tools an instruction adds
  are announced in that message (a trainer's prompt tokens are never rewritten).
- The reward is :func:`topoeval.training.rewards.combine` over the episode's scores — the number
  :func:`topoeval.reward` gives the same trajectory (:meth:`trajectory`): ``success``, ``dq``, any
  score, or a weighted mix such as ``{"success": 0.7, "dq": 0.3}``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, ToolCall, Usage
from topoeval.core.suite import Task
from topoeval.formats import ToolFormat, get_format, suite_format
from topoeval.formats.hermes import parse_prompt_reply
from topoeval.integrations.topology_tasks import REPORTED
from topoeval.protocol.schema import Limits
from topoeval.protocol.topology import ResolvedTopology, topology_from
from topoeval.runner.episode import EpisodeState
from topoeval.training.rewards import combine

#: The per-episode counts reported beside the scores (:meth:`TextEpisode.metrics`).
COUNTS = ("tool_calls", "invalid_calls", "tool_errors", "unsafe_commits", "over_asks", "serial_violations",
          "redundant_calls", "turns")
#: The per-episode numbers a trainer logs for every row alike (:meth:`TextEpisode.summary`).
SUMMARY = ("success", "dq", "tool_calls", "invalid_calls", "turns")
#: Status of an episode a trainer cut short (its response-length budget ran out).
TRUNCATED = "limit:response_length"


class EpisodeRow(BaseModel):
    """What an exported row tells the env about its episode (the row's ``extra_info`` / ``extras``)."""

    topoeval_task: dict[str, Any] = Field(description="The full task (Task.model_dump), ground truth included.")
    topology_spec: dict[str, Any] = Field(description="The topology: name, suite, params, transforms.")
    topology: str = Field(description="Topology name (the row's data_source).")
    protocol: str = Field(default="", description="Protocol the row was exported from (informational).")
    split: str = Field(default="train", description="Split the task is from.")
    index: int = Field(default=0, description="Task index in the split.")
    tool_format: str = Field(default="hermes", description="Tool-call format the model is addressed in.")
    metric: str | dict[str, float] = Field(default="success", description="Reward: a score name or weights.")
    max_turns: int = Field(default=12, description="Assistant turns per episode (the protocol's limit).")
    max_tool_calls: int = Field(default=30, description="Tool calls per episode (the protocol's limit).")
    max_turns_per_instruction: int = Field(default=0, description="Turns per user instruction of a multi-turn "
                                                                  "task (0: only max_turns).")

    @classmethod
    def parse(cls, data: Any) -> EpisodeRow:
        """A row's ``extra_info`` (dict, or a dict whose JSON-text fields are decoded) as a row spec."""
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict) or "topoeval_task" not in data:
            raise UserError("this row carries no topoeval task (extra_info.topoeval_task): make it with "
                            "`topoeval export PROTOCOL --for verl|skyrl`")
        data = dict(data)
        for key in ("topoeval_task", "topology_spec", "metric"):
            value = data.get(key)
            if isinstance(value, str) and value[:1] in "{[\"":
                data[key] = json.loads(value)
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields})


def episode_format(topology: ResolvedTopology, tool_format: str) -> ToolFormat:
    """The format an episode of ``topology`` is played in: a topology's own ``tool_format`` transform
    (a format-shift step) wins over the row's, as in ``topoeval run``."""
    return get_format(suite_format(topology.suite) or tool_format)


def opening(topology: ResolvedTopology, task: Task, fmt: ToolFormat) -> list[dict[str, Any]]:
    """The opening chat messages of ``task`` in ``fmt``: the topology's system prompt (with the tools
    the task offers at its start, rendered by a prompt format) and the task's user message."""
    messages = [{"role": "system", "content": topology.system_prompt()}, {"role": "user", "content": task.prompt}]
    if fmt.native:
        return messages
    withheld = set(task.withheld_tools)
    return fmt.render(messages, [t.openai() for t in topology.suite.tools if t.name not in withheld])


class TextEpisode:
    """One episode of ``task`` on ``topology``, driven by the model's raw text (module docstring)."""

    def __init__(self, task: Task, topology: ResolvedTopology, *, tool_format: str = "hermes",
                 metric: str | dict[str, float] = "success", limits: Limits | None = None):
        self.task, self.topology, self.metric = task, topology, metric
        self.format: ToolFormat = episode_format(topology, tool_format)
        self.state = EpisodeState(topology.suite, task, topology.system_prompt(), [], limits or Limits())
        if not self.format.native:
            self.format.check(self.state.tools)
        combine(self._scores_now(), metric)  # an unknown metric fails here, not at the end of the episode
        self._offered = [t["function"]["name"] for t in self.state.tools]
        self.replies: list[AssistantMessage] = []

    @classmethod
    def from_row(cls, extra_info: Any, *, suites_dirs: list | tuple = ()) -> TextEpisode:
        """The episode an exported row describes (its ``extra_info``, or SkyRL's ``extras["extra_info"]``)."""
        row = EpisodeRow.parse(extra_info)
        topology = topology_from(row.topology_spec, suites_dirs=suites_dirs)
        limits = Limits(max_turns=row.max_turns, max_tool_calls=row.max_tool_calls,
                        max_turns_per_instruction=row.max_turns_per_instruction or None)
        return cls(Task.model_validate(row.topoeval_task), topology, tool_format=row.tool_format, metric=row.metric,
                   limits=limits)

    # -- what the model reads ----------------------------------------------------------------
    def template_tools(self) -> list[dict[str, Any]] | None:
        """The tools for the chat template's ``tools=`` (``native`` only; None when the prompt carries them)."""
        return list(self.state.tools) if self.format.native else None

    def prompt_messages(self) -> list[dict[str, Any]]:
        """The episode's opening chat messages: system (with the tools in the format) and the task's user turn."""
        return opening(self.topology, self.task, self.format)

    def reply_text(self, reply: AssistantMessage) -> str:
        """An assistant message as the model writes it in this format (a scripted or demo reply)."""
        calls = [(c.name, c.arguments) for c in reply.tool_calls]
        if self.format.native:
            from topoeval.formats.hermes import call_text

            return "\n".join(p for p in [reply.content or "", *(call_text(n, a) for n, a in calls)] if p)
        rendered = self.format.render([{"role": "system", "content": ""}, reply.openai()], self.state.tools)
        return rendered[-1]["content"]

    # -- one turn ------------------------------------------------------------------------------
    def parse(self, text: str) -> AssistantMessage:
        """The model's text read in the format: its calls (malformed ones kept, to be judged invalid)."""
        if self.format.native:
            content, parsed = parse_prompt_reply(text)
            calls = [(c.name, c.arguments) for c in parsed]
        else:
            content, calls = self.format.parse(text, self.state.tools)
        turn = self.state.turns
        tool_calls = [ToolCall(id=f"call_{turn}_{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)]
        return AssistantMessage(content=content or (None if tool_calls else ""), tool_calls=tool_calls)

    def step_text(self, text: str, *, completion_tokens: int = 0) -> list[dict[str, Any]]:
        """Apply one turn of model text; returns the chat messages the model reads next (empty when done)."""
        if self.done:
            raise UserError("the episode is over")
        reply = self.parse(text)
        reply.usage = Usage(completion_tokens=completion_tokens)
        self.replies.append(reply)
        before = len(self.state.messages)
        self.state.step(reply)
        produced = self.state.messages[before + 1:]  # after the reply itself
        if self.done:
            return []
        return self._render(produced)

    def truncate(self) -> None:
        """End the episode because the trainer's token budget ran out (scored as it stands)."""
        if not self.done:
            self.state.status = TRUNCATED

    def _render(self, produced: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        tools_now = [t["function"]["name"] for t in self.state.tools]
        added = [t for t in self.state.tools if t["function"]["name"] not in self._offered]
        self._offered = tools_now
        if self.format.native:
            out = [{k: m[k] for k in ("role", "content", "tool_call_id", "name") if k in m} for m in produced]
        else:
            # the format's own rendering of the new messages, after a stand-in prefix it renders the same
            stand_in = [{"id": m.get("tool_call_id", ""), "type": "function",
                         "function": {"name": m.get("name", ""), "arguments": "{}"}}
                        for m in produced if m["role"] == "tool"]
            head: list[dict[str, Any]] = [{"role": "system", "content": ""},
                                          {"role": "assistant", "content": "", "tool_calls": stand_in}]
            out = self.format.render(head + produced, self.state.tools)[2:]
        if added and out and out[-1]["role"] == "user":
            from topoeval.formats.base import tool_lines

            block = self.format.render_tools(added) if not self.format.native else "\n".join(tool_lines(added))
            out[-1] = {**out[-1], "content": out[-1]["content"] + "\n\nTools you can use from now on:\n" + block}
        return out

    # -- the outcome -----------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.state.done

    @property
    def turns(self) -> int:
        return self.state.turns

    def trajectory(self) -> list[dict[str, Any]]:
        """The conversation in OpenAI format from the task's user message on (what :func:`topoeval.reward` reads)."""
        return list(self.state.messages[self.state.prefix - 1:])

    def _scores_now(self) -> dict[str, Any]:
        return self.state.record()["scores"]

    def record(self) -> dict[str, Any]:
        """The scored episode record (as ``topoeval run`` writes it)."""
        return self.state.record()

    def scores(self) -> dict[str, Any]:
        return self._scores_now()

    def reward(self, scores: dict[str, Any] | None = None) -> float:
        """The row's reward metric over the episode's scores."""
        return combine(scores if scores is not None else self._scores_now(), self.metric)

    def metrics(self, scores: dict[str, Any] | None = None) -> dict[str, float]:
        """Numeric per-episode metrics: the reported scores (absent where a dimension does not apply) and counts."""
        scores = scores if scores is not None else self._scores_now()
        out = {f"topoeval/{k}": float(scores[k]) for k in (*REPORTED, *COUNTS)
               if isinstance(scores.get(k), (int, float)) and not isinstance(scores.get(k), bool)}
        out["topoeval/truncated"] = float(self.state.status == TRUNCATED)
        return out

    def summary(self, scores: dict[str, Any] | None = None) -> dict[str, float]:
        """The same keys on every episode (a trainer batches them): reward, success, dq (0 where no
        decision-quality dimension applies), tool calls, invalid calls, turns, truncated."""
        scores = scores if scores is not None else self._scores_now()
        out = {"topoeval_reward": self.reward(scores)}
        out.update({f"topoeval_{k}": float(scores.get(k) or 0.0) for k in SUMMARY})
        out["topoeval_truncated"] = float(self.state.status == TRUNCATED)
        return out

    def close(self) -> None:
        """Release the world (an MCP topology's server process); safe to call twice."""
        self.state.close()
