"""Reference policies: the oracle (and its flawed variants), oracle-quit-early, noop, random, and the oracle with
weaknesses planted on known topology axes (``planted-format``, ``planted-format+merged``, ...)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from topoeval.core.messages import AssistantMessage, ToolCall, final
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams
from topoeval.policies.oracle import quit_early


class OraclePolicy(Policy):
    """Solves every task from its ground truth (the suite's oracle), parallel where the DAG allows."""

    concurrency = 64

    def __init__(self, variant: str = "oracle"):
        self.name = variant
        self.variant = variant

    async def act(self, messages, tools, sampling, ctx: EpisodeContext) -> AssistantMessage:
        return ctx.suite.oracle(ctx.task, episode_messages(messages, ctx.task.prompt), self.variant)


def episode_messages(messages: list[dict[str, Any]], prompt: str | None = None) -> list[dict[str, Any]]:
    """The messages of the current episode, from its opening user message on (demos come before it).

    ``prompt``: the task's opening message — the last user message carrying it opens the episode,
    so the later instructions of a multi-turn task stay in. Without it (or when it is not found)
    the last user message does.
    """
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    own = [i for i in users if prompt is not None and messages[i].get("content") == prompt]
    start = own[-1] if own else (users[-1] if users else 0)
    return messages[start:]


class QuitEarlyPolicy(Policy):
    """Follows the oracle's plan for about half of its calls (half the gold DAG's nodes, rounded
    down: none on a one-node plan, where it is the do-nothing agent), never makes an irreversible
    call, then stops with an empty answer.

    It solves nothing (success 0) but does only useful work: the check that ``parallelism`` and
    ``efficiency`` follow progress — they must stay at or under its coverage.
    """

    name = "oracle-quit-early"
    concurrency = 64

    async def act(self, messages, tools, sampling, ctx: EpisodeContext) -> AssistantMessage:
        messages = episode_messages(messages, ctx.task.prompt)
        made = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        budget = len(ctx.task.gold) // 2
        step = ctx.suite.oracle(ctx.task, messages, "oracle")
        cut = quit_early(step, made, budget, ctx.suite.tools) if step.tool_calls else None
        return cut or final("")


class CollateralPolicy(Policy):
    """The oracle, plus one write on an entity outside the task's scope once the plan is done
    (another customer's line, another reservation, another user's email: the suite's
    :meth:`~topoeval.core.suite.Suite.collateral_call`). It keeps a benchmark's own verdict wherever that
    verdict looks only at what the task asked for; topoeval's ``collateral`` must flag every episode.
    On a suite without such an entity it is the oracle."""

    name = "oracle-collateral"
    concurrency = 64

    async def act(self, messages, tools, sampling, ctx: EpisodeContext) -> AssistantMessage:
        messages = episode_messages(messages, ctx.task.prompt)
        step = ctx.suite.oracle(ctx.task, messages, "oracle")
        given = sum(1 for m in messages if m.get("role") == "user") - 1
        # the plan is done at a hand-back, or at a call that closes the episode (τ² solo's done): damage before it
        closing = bool(step.tool_calls) and all(ctx.suite.ends_episode(ctx.task, c.name) for c in step.tool_calls)
        if (step.tool_calls and not closing) or given < len(ctx.task.instructions):
            return step
        call = ctx.suite.collateral_call(ctx.task, messages)
        if call is None:
            return step
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        return AssistantMessage(tool_calls=[ToolCall.make(f"collateral_{turn}", *call)])


class NoopPolicy(Policy):
    """Answers at once with nothing: every task must fail for it."""

    name = "noop"
    concurrency = 64

    async def act(self, messages, tools, sampling, ctx) -> AssistantMessage:
        return final("")


class RandomPolicy(Policy):
    """A few random schema-valid tool calls, then a random word from what it saw as the answer.

    Seeded by (task id, sample), so it is reproducible.
    """

    name = "random"
    concurrency = 64
    max_tool_turns = 3

    async def act(self, messages, tools, sampling: SamplingParams, ctx: EpisodeContext) -> AssistantMessage:
        messages = episode_messages(messages, ctx.task.prompt)
        turns = sum(1 for m in messages if m.get("role") == "assistant")
        rng = random.Random(_seed(ctx.task.id, ctx.sample, turns))
        words = _words(" ".join(str(m.get("content") or "") for m in messages if m.get("role") != "system"))
        if tools and turns < self.max_tool_turns and rng.random() < 0.8:
            picked = rng.sample(tools, k=min(len(tools), rng.randint(1, 2)))
            return AssistantMessage(
                tool_calls=[
                    ToolCall.make(f"r{turns}_{i}", t["function"]["name"],
                                  _random_args(t["function"]["parameters"], rng, words))
                    for i, t in enumerate(picked)
                ]
            )
        return final(rng.choice(words) if words else "")


def _seed(*parts: Any) -> int:
    return int.from_bytes(hashlib.sha256(json.dumps(parts).encode()).digest()[:8], "big")


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]+", text)


def _random_args(schema: dict[str, Any], rng: random.Random, words: list[str]) -> dict[str, Any]:
    """Arguments that satisfy a (simple) JSON schema: required keys, right types, enums honoured."""
    props = schema.get("properties", {})
    out: dict[str, Any] = {}
    for key in schema.get("required", list(props)):
        out[key] = _random_value(props.get(key, {}), rng, words)
    return out


def _random_value(prop: dict[str, Any], rng: random.Random, words: list[str]) -> Any:
    if "enum" in prop:
        return rng.choice(prop["enum"])
    kind = prop.get("type", "string")
    if kind == "integer":
        return rng.randint(prop.get("minimum", 0), prop.get("maximum", 100))
    if kind == "number":
        return rng.uniform(prop.get("minimum", 0), prop.get("maximum", 100))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [_random_value(prop.get("items", {}), rng, words)]
    if kind == "object":
        return _random_args(prop, rng, words)
    n = rng.randint(1, 3)
    return " ".join(rng.choice(words) for _ in range(n)) if words else "x"


#: The share of tasks a planted weakness gives up on, on a topology that moved its axis (its planted effect
#: on success, given an oracle that solves every task elsewhere).
PLANTED_SIZE = 0.5


def _innermost(suite: Any) -> Any:
    """The suite under every transform (its manifest is the suite's own, unmoved topology)."""
    seen = 0
    while getattr(suite, "inner", None) is not None and seen < 64:
        suite, seen = suite.inner, seen + 1
    return suite


def _descriptor_moved(axis: str) -> Any:
    def moved(suite: Any, tools: list[dict[str, Any]]) -> bool:
        return getattr(suite.manifest.topology, axis) != getattr(_innermost(suite).manifest.topology, axis)
    return moved


def _format_moved(suite: Any, tools: list[dict[str, Any]]) -> bool:
    from topoeval.formats import suite_format

    return suite_format(suite) is not None


def _schema_moved(suite: Any, tools: list[dict[str, Any]]) -> bool:
    native = {t.name for t in _innermost(suite).manifest.tools}
    offered = {t["function"]["name"] for t in tools}
    return bool({n for n in offered if not n.endswith("_batch")} - native)


def _merged(suite: Any, tools: list[dict[str, Any]]) -> bool:
    offered = {t["function"]["name"] for t in tools}
    return "book" in offered and "pay" not in offered


def _dependency_moved(suite: Any, tools: list[dict[str, Any]]) -> bool:
    return (suite.manifest.topology.calls_per_turn is not None
            or any(t["function"]["name"].endswith("_batch") for t in tools))


#: Planted weaknesses: name -> (the axis it sits on, what makes it fire, the test on the episode's suite and the
#: tools offered). Each fires only where its axis moved from the suite's own topology, so on the base topology
#: a planted policy is the oracle.
PLANTED: dict[str, tuple[str, str, Any]] = {
    "format": ("format", "the model is addressed in another tool-call format", _format_moved),
    "schema": ("schema", "a tool it is offered is not one of the suite's own (renamed, or a distractor)",
               _schema_moved),
    "user": ("user", "the user axis differs from the suite's own (no traveller to ask)", _descriptor_moved("user")),
    "merged": ("reversibility", "hold and pay are merged into one irreversible book", _merged),
    "ordering": ("ordering", "trade-offs are settled otherwise than by its own ordering",
                 _descriptor_moved("ordering")),
    "dependency": ("dependency", "calls are limited to one a turn, or batch tools are offered", _dependency_moved),
    "instructions": ("instructions", "the request comes as a conversation", _descriptor_moved("instructions")),
}
PLANTED_PREFIX = "planted-"


def planted_weaknesses(spec: str) -> tuple[str, ...] | None:
    """``planted-format`` -> ("format",), ``planted-format+merged`` -> ("format", "merged"); None for any other
    name (an unknown weakness included: the registry's unknown-model message lists the known ones)."""
    if not spec.startswith(PLANTED_PREFIX):
        return None
    parts = tuple(spec.removeprefix(PLANTED_PREFIX).split("+"))
    if not parts or any(p not in PLANTED for p in parts) or len(set(parts)) != len(parts):
        return None
    return parts


class PlantedPolicy(Policy):
    """The oracle with weaknesses planted on known axes, the known answer an axis attribution must recover.

    On a topology where a weakness's axis moved (:data:`PLANTED`), it gives up — an empty answer at once — on
    a seeded share :data:`PLANTED_SIZE` of the tasks, drawn per weakness from the task's split and index (the
    same tasks on every topology of a base, independently for each weakness); everywhere else it is the oracle.
    So its loss on a move of that axis is PLANTED_SIZE in expectation, and 0 on every other move.
    """

    concurrency = 64

    def __init__(self, weaknesses: tuple[str, ...], size: float = PLANTED_SIZE):
        self.weaknesses = weaknesses
        self.size = size
        self.name = PLANTED_PREFIX + "+".join(weaknesses)

    def gives_up(self, weakness: str, task: Any) -> bool:
        """Whether ``weakness`` makes it give up on ``task`` (where its axis moved): a seeded draw per task."""
        return _seed(weakness, task.split, task.index) / 2**64 < self.size

    async def act(self, messages, tools, sampling, ctx: EpisodeContext) -> AssistantMessage:
        for weakness in self.weaknesses:
            if PLANTED[weakness][2](ctx.suite, tools) and self.gives_up(weakness, ctx.task):
                return final("")
        return ctx.suite.oracle(ctx.task, episode_messages(messages, ctx.task.prompt), "oracle")
