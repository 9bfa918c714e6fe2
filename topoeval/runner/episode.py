"""One rollout of one policy on one task: the agent loop, and the episode state it drives.

:class:`EpisodeState` is the single place where an assistant message meets the world — the
runner's loop, the Gymnasium-style env (:mod:`topoeval.training.env`) and :func:`topoeval.reward` all step
it, so training rewards and evaluation scores cannot drift apart.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, ToolCall, final
from topoeval.core.policy import REFUSAL_PREFIX, ContextLimitError, EpisodeContext, Policy, RefusalError, SamplingParams
from topoeval.core.replies import ReplyLimits, bound_reply
from topoeval.core.secrets import mask_secrets
from topoeval.core.state import state_diff
from topoeval.core.suite import Suite, Task, World, WorldError
from topoeval.core.users import active_user
from topoeval.metrics.collateral import changed_entities, classify
from topoeval.metrics.scoring import score_episode
from topoeval.protocol.schema import Limits
from topoeval.runner.tool_exec import CallRecord, execute_call, observation_text


def episode_key(model: str, baseline: str, topology: str, task_id: str, sample: int) -> str:
    """Identity of an episode within a run (what resume skips on)."""
    return f"{model}|{baseline}|{topology}|{task_id}|{sample}"


def episode_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class EpisodeState:
    """A live episode: the world, the conversation, and every call made so far.

    ``step(reply)`` applies one assistant message (runs its tool calls, or ends the episode when
    it has none); ``record()`` is the scored episode record as written to episodes.jsonl;
    ``close()`` releases the world. A world whose backend fails (:class:`WorldError`, e.g. an MCP
    server that does not start or dies) ends the episode with status ``error``; one that never
    started leaves ``world`` None and the record without scores.
    """

    def __init__(self, suite: Suite, task: Task, system_prompt: str, demos: list[dict[str, Any]], limits: Limits,
                 reply_limits: ReplyLimits | None = None):
        self.suite, self.task, self.limits = suite, task, limits
        #: what one reply may hold (:mod:`topoeval.core.replies`): every reply is bounded before it is applied
        self.reply_limits = reply_limits or ReplyLimits()
        self.started = time.perf_counter()
        self.withheld = set(task.withheld_tools)
        self._offer_tools()
        #: index of the user instruction being served (0: the prompt), and assistant turns spent on it
        self.instruction = 0
        self.instruction_turns = 0
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}, *demos,
                                               {"role": "user", "content": task.prompt}]
        self.prefix = len(self.messages)
        self.n_demo_messages = len(demos)
        self.calls: list[CallRecord] = []
        self.errors: list[str] = []
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        self.cost: float | None = None
        self.policy_s = 0.0
        self.final_answer: str | None = None
        self.status = "limit:max_turns"
        self.turns = 0
        self.world: World | None = None
        self.state_before: dict[str, Any] = {}
        #: collateral bookkeeping: entity -> the calls after which it changed, and the irreversible calls
        self.touched: dict[str, list[int]] = {}
        self.irreversible_calls: set[int] = set()
        self._entities: dict[str, Any] = {}
        try:
            self.world = suite.make_world(task)
            self.state_before = self.world.snapshot()
            self._entities = suite.collateral_entities(self.state_before)
        except WorldError as exc:
            self.close()
            self.world = None
            self.fail(f"world: {exc}")

    @property
    def done(self) -> bool:
        return self.status != "limit:max_turns" or self.turns >= self.limits.max_turns

    def _offer_tools(self) -> None:
        """The suite's tools minus those the task still withholds (in suite order)."""
        offered = [t for t in self.suite.tools if t.name not in self.withheld]
        self.tool_specs = {t.name: t for t in offered}
        self.tools = [t.openai() for t in offered]

    def _hand_back(self) -> dict[str, Any] | None:
        """The agent ended its turn: close the instruction, and send the next one if any (its user message)."""
        if self.world is not None:
            self.world.end_instruction(self.instruction)
        if self.instruction >= len(self.task.instructions):
            return None
        nxt = self.task.instructions[self.instruction]
        self.instruction += 1
        self.instruction_turns = 0
        if nxt.tools_added:
            self.withheld -= set(nxt.tools_added)
            self._offer_tools()
        if self.world is not None:
            self.world.events.append({"type": "instruction", "index": self.instruction, "turn": self.turns})
        message = {"role": "user", "content": nxt.content}
        self.messages.append(message)
        return message

    def step(self, reply: AssistantMessage) -> list[dict[str, Any]]:
        """Apply one assistant message; returns the messages it produced: its tool results, or the next
        user instruction when it handed the turn back (empty when the episode ends)."""
        reply = bound_reply(reply, self.reply_limits)
        turn = self.turns
        self.turns += 1
        self.instruction_turns += 1
        self.policy_s += reply.latency_s
        self.usage["prompt_tokens"] += reply.usage.prompt_tokens
        self.usage["completion_tokens"] += reply.usage.completion_tokens
        if reply.cost is not None:
            self.cost = (self.cost or 0.0) + reply.cost
        reply.tool_calls = _unique_ids(reply.tool_calls, turn)
        self.messages.append(reply.openai())
        if not reply.tool_calls:
            self.final_answer = reply.content or ""
            following = self._hand_back()
            if following is not None:
                return [following]
            self.status = "done"
            return []
        out = []
        per_turn = self.suite.manifest.topology.calls_per_turn
        for i, call in enumerate(reply.tool_calls):
            if per_turn is not None and i >= per_turn:
                rec = CallRecord(
                    turn=turn, id=call.id, name=call.name, raw_arguments=call.arguments, status="skipped",
                    error=f"this topology takes {'one tool call' if per_turn == 1 else f'{per_turn} tool calls'} "
                    "per turn; make this call in a later turn",
                )
            elif len(self.calls) >= self.limits.max_tool_calls:
                rec = CallRecord(
                    turn=turn, id=call.id, name=call.name, raw_arguments=call.arguments,
                    status="skipped", error=f"tool-call limit of {self.limits.max_tool_calls} reached",
                )
                self.status = "limit:max_tool_calls"
            else:
                assert self.world is not None
                n_events = len(self.world.events)
                try:
                    rec = execute_call(call, turn, self.tool_specs, self.world, self.reply_limits.max_argument_depth)
                except WorldError as exc:  # the world's backend failed: an infrastructure error
                    rec = CallRecord(turn=turn, id=call.id, name=call.name, raw_arguments=call.arguments,
                                     status="tool_error", error=str(exc))
                    self.fail(f"world: {exc}")
                for event in self.world.events[n_events:]:
                    event.update(call=len(self.calls), turn=turn)
            self.calls.append(rec)
            if rec.status not in ("skipped", "invalid"):
                self._track_entities(len(self.calls) - 1, call.name)
            msg = {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": observation_text(rec)}
            self.messages.append(msg)
            out.append(msg)
            if self.status == "error":
                break
        cap = self.limits.max_turns_per_instruction
        if cap is not None and self.instruction_turns >= cap and self.status == "limit:max_turns":
            self.status = "limit:max_turns_per_instruction"
        return out

    def _track_entities(self, index: int, name: str) -> None:
        """After a call that may write (any tool not marked read), note which entities it changed."""
        spec = self.tool_specs.get(name)
        if self.world is None or (spec is not None and spec.effect.value == "read"):
            return
        try:
            now = self.suite.collateral_entities(self.world.snapshot())
        except WorldError:  # a backend that cannot be read now: the end state still decides
            return
        for entity in changed_entities(self._entities, now):
            self.touched.setdefault(entity, []).append(index)
        if spec is not None and spec.effect.value == "irreversible":
            self.irreversible_calls.add(index)
        self._entities = now

    def collateral(self, after: dict[str, Any]) -> dict[str, Any] | None:
        """The episode's collateral reading (:mod:`topoeval.metrics.collateral`), None where the suite
        defines no scope for the task."""
        scope = self.suite.collateral_scope(self.task)
        if scope is None:
            return None
        entities = self.suite.collateral_entities
        gold = entities(scope.gold_state) if scope.gold_state is not None else None
        report = classify(entities(self.state_before), entities(after), gold, scope, self.touched,
                          self.irreversible_calls)
        return report.model_dump(mode="json")

    def fail(self, error: str) -> None:
        """End the episode on a policy or world failure (recorded, never raised)."""
        self.errors.append(mask_secrets(error))  # a URL's credential never reaches episodes.jsonl
        self.status = "error"

    def close(self) -> None:
        """Release the world (server processes, scratch folders); safe to call more than once."""
        if self.world is not None:
            self.world.close()

    def record(self, **labels: Any) -> dict[str, Any]:
        """The scored episode record."""
        after = self.world.snapshot() if self.world is not None else None
        record: dict[str, Any] = {
            **labels,
            "task_id": self.task.id,
            "family": self.task.family,
            "status": self.status,
            "final_answer": self.final_answer,
            "expected_answer": self.task.answer,  # the suite's gold text answer (None for state tasks)
            "turns": self.turns,
            "user_turns": self.instruction + 1,
            "messages": self.messages[self.prefix - 1 :],
            "n_demo_messages": self.n_demo_messages,
            "calls": [c.model_dump(mode="json") for c in self.calls],
            "events": list(getattr(self.world, "events", [])),
            "state_diff": state_diff(self.state_before, after) if after is not None else {},
            "collateral": self.collateral(after) if after is not None else None,
            "usage": self.usage,
            "cost": self.cost,
            "policy_s": round(self.policy_s, 6),
            "wall_s": round(time.perf_counter() - self.started, 6),
            "errors": self.errors,
        }
        # a world that never started has nothing to score: the error episode carries no metrics
        record["scores"] = score_episode(self.suite, self.task, record, self.world) if self.world is not None else {}
        return record


async def run_episode(
    *,
    policy: Policy,
    suite: Suite,
    task: Task,
    system_prompt: str,
    demos: list[dict[str, Any]],
    limits: Limits,
    sampling: SamplingParams,
    sample: int,
    shots: int,
    labels: dict[str, Any],
    reply_limits: ReplyLimits | None = None,
) -> dict[str, Any]:
    """Roll out ``policy`` on ``task``; returns the episode record (never raises for model faults: whatever
    a reply holds, the episode ends in a record, with status ``error`` when it could not be scored).
    The world is closed when the episode ends, fails or is cancelled.

    When a model plays the user (``--user-model``), a world step may wait on that model (its
    ``ask_user`` is a blocking call), so the step runs in a worker thread (``asyncio.to_thread``,
    which carries the context variables): the run's other episodes go on meanwhile. Each episode
    still steps its own world one message at a time; the default user steps on the loop, as before."""
    state = EpisodeState(suite, task, system_prompt, demos, limits, reply_limits)
    off_loop = active_user().model is not None
    ctx = EpisodeContext(task=task, suite=suite, sample=sample, shots=shots, key=labels.get("key", ""))
    try:
        while not state.done:
            try:
                turn_sampling = sampling.for_turn(task.id, sample, state.turns)  # independent draws per turn
                reply = await policy.act(state.messages, state.tools, turn_sampling, ctx)
            except UserError:  # a set-up problem (missing extra, server that cannot start): end the run
                raise
            except ContextLimitError:  # the conversation outgrew the model: its own outcome, scored
                state.status = "limit:context_window"
                break
            except RefusalError as exc:  # the provider's content policy blocked it: the model's answer, scored
                reply = final(REFUSAL_PREFIX + (exc.detail or str(exc)))
            except Exception as exc:  # backend failure after its own retries: record, do not drop
                state.fail(f"policy: {type(exc).__name__}: {_short(exc)}")
                break
            try:
                if off_loop:
                    await asyncio.to_thread(state.step, reply)
                else:
                    state.step(reply)
            except Exception as exc:  # a reply the harness could not apply: the episode's error
                state.fail(f"harness: {type(exc).__name__}: {_short(exc)}")
                break
        try:
            return state.record(**labels, sample=sample, shots=shots)
        except Exception as exc:  # a record that cannot be built: an error record instead
            return fallback_record({**labels, "sample": sample, "shots": shots}, task, exc, state.errors)
    finally:
        state.close()


def fallback_record(labels: dict[str, Any], task: Task, exc: BaseException,
                    errors: list[str] | None = None) -> dict[str, Any]:
    """The record of an episode whose own record could not be built or written (a reply the harness could
    not serialise): status ``error``, no scores, the reason in ``errors``; it runs again on resume."""
    return {**labels, "task_id": task.id, "family": task.family, "status": "error", "final_answer": None,
            "expected_answer": task.answer, "turns": 0, "messages": [], "calls": [], "events": [], "state_diff": {},
            "collateral": None, "usage": {"prompt_tokens": 0, "completion_tokens": 0}, "cost": None, "scores": {},
            "errors": [*(errors or []), f"record: {type(exc).__name__}: {_short(exc)}"]}


def _short(exc: BaseException) -> str:
    """An exception's message on one line, at most 500 characters (a reply can make it huge)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 500 else text[:500] + "…"


def _unique_ids(tool_calls: list[ToolCall], turn: int) -> list[ToolCall]:
    """Give every call a non-empty id unique within the turn (models sometimes repeat or omit them)."""
    seen: set[str] = set()
    out = []
    for i, c in enumerate(tool_calls):
        cid = c.id or f"call_{turn}_{i}"
        if cid in seen:
            cid = f"{cid}_{i}"
        seen.add(cid)
        out.append(c if cid == c.id else c.model_copy(update={"id": cid}))
    return out
