"""Renaming transforms (schema axis): tools and arguments get seeded synonyms, distractor tools
are added. The result is a :class:`TransformedSuite` that maps tasks, world calls and oracle
messages between the new vocabulary and the inner suite's.
"""

from __future__ import annotations

import json
import random
from typing import Any

from topoeval.core.collateral import CollateralScope
from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.core.suite import Effect, GoldCall, Suite, Task, ToolSpec, World

from .args import DistractorArgs, SeedArgs
from .delegate import DelegatingSuite

TOOL_SYNONYMS = {
    "search": ["find_articles", "query_index", "lookup"],
    "open_page": ["read_article", "fetch_entry", "get_page"],
    "search_flights": ["find_itineraries", "list_flights", "query_fares"],
    "get_city_events": ["city_calendar", "list_events", "events_in_city"],
    "ask_user": ["message_traveller", "ask_customer", "query_user"],
    "hold_seat": ["reserve_seat", "block_seat", "place_hold"],
    "release_hold": ["cancel_hold", "free_seat", "drop_hold"],
    "pay": ["charge_payment", "purchase", "settle_hold"],
    "cancel_booking": ["refund_booking", "void_booking", "undo_booking"],
}
ARG_SYNONYMS = {
    "query": ["q", "terms", "text"],
    "title": ["page_title", "name", "entry"],
    "origin": ["from_city", "departure", "source"],
    "destination": ["to_city", "arrival", "target"],
    "date": ["day", "travel_date", "on"],
    "city": ["location", "place", "town"],
    "month": ["period", "year_month", "when"],
    "question": ["message", "prompt", "text"],
    "flight_id": ["itinerary", "flight", "fare_id"],
    "hold_id": ["reservation", "hold", "hold_ref"],
    "booking_id": ["booking", "order_id", "ticket"],
}
DISTRACTORS = [
    ("get_weather", "Current weather in a city.", {"city": {"type": "string"}}),
    ("convert_currency", "Convert an amount between currencies.",
     {"amount": {"type": "number"}, "to": {"type": "string"}}),
    ("translate_text", "Translate text into another language.",
     {"text": {"type": "string"}, "language": {"type": "string"}}),
    ("get_time", "Current local time in a city.", {"city": {"type": "string"}}),
    ("news_headlines", "Today's headlines on a topic.", {"topic": {"type": "string"}}),
    ("unit_convert", "Convert a quantity between units.", {"value": {"type": "number"}, "unit": {"type": "string"}}),
]


class TransformedSuite(DelegatingSuite):
    """``inner`` seen through a renaming of tools/arguments plus extra distractor tools."""

    def __init__(self, inner: Suite, tool_names: dict[str, str], arg_names: dict[str, dict[str, str]],
                 distractors: list[ToolSpec], topology_update: dict[str, Any]):
        self.tool_names = tool_names  # inner name -> outer name
        self.arg_names = arg_names  # inner tool -> {inner arg -> outer arg}
        self.distractors = {t.name: t for t in distractors}
        tools = [self._outer_spec(t) for t in inner.tools] + distractors
        topology = inner.manifest.topology.model_copy(update=topology_update)
        super().__init__(inner, inner.manifest.model_copy(update={"tools": tools, "topology": topology}),
                         topology_update)
        self._inner_tool = {v: k for k, v in tool_names.items()}

    # -- name mapping -------------------------------------------------------------------
    def _outer_spec(self, spec: ToolSpec) -> ToolSpec:
        amap = self.arg_names.get(spec.name, {})
        params = json.loads(json.dumps(spec.parameters))
        params["properties"] = {amap.get(k, k): v for k, v in params.get("properties", {}).items()}
        if "required" in params:
            params["required"] = [amap.get(k, k) for k in params["required"]]
        return spec.model_copy(update={"name": self.tool_names.get(spec.name, spec.name), "parameters": params})

    def outer_call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        amap = self.arg_names.get(name, {})
        return self.tool_names.get(name, name), {amap.get(k, k): v for k, v in args.items()}

    def inner_call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        inner = self._inner_tool.get(name, name)
        back = {v: k for k, v in self.arg_names.get(inner, {}).items()}
        return inner, {back.get(k, k): v for k, v in args.items()}

    def _map_gold(self, gold: list[GoldCall], to_outer: bool) -> list[GoldCall]:
        conv = self.outer_call if to_outer else self.inner_call
        out = []
        for g in gold:
            name, args = conv(g.tool, g.arguments)
            out.append(g.model_copy(update={"tool": name, "arguments": args}))
        return out

    def _map_task(self, task: Task, to_outer: bool) -> Task:
        names = (lambda n: self.tool_names.get(n, n)) if to_outer else (lambda n: self._inner_tool.get(n, n))
        return task.model_copy(update={
            "gold": self._map_gold(task.gold, to_outer),
            "irreversible_tools": [names(t) for t in task.irreversible_tools],
            "withheld_tools": [names(t) for t in task.withheld_tools],
            "instructions": [i.model_copy(update={"tools_added": [names(t) for t in i.tools_added]})
                             for i in task.instructions],
            "commit_targets": {names(k): v for k, v in task.commit_targets.items()},
        })

    def _map_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for m in messages:
            m = dict(m)
            if m.get("tool_calls"):
                calls = []
                for c in m["tool_calls"]:
                    try:
                        args = json.loads(c["function"]["arguments"] or "{}")
                    except json.JSONDecodeError:
                        args = {}
                    name, args = self.inner_call(c["function"]["name"], args if isinstance(args, dict) else {})
                    calls.append({**c, "function": {"name": name, "arguments": json.dumps(args)}})
                m["tool_calls"] = calls
            if m.get("role") == "tool" and m.get("name"):
                m["name"] = self._inner_tool.get(m["name"], m["name"])
            out.append(m)
        return out

    # -- the suite contract (the rest is the inner suite's: DelegatingSuite) ------------
    def outer_task(self, task: Task) -> Task:
        return self._map_task(task, to_outer=True)

    def tools_for(self, params: Any) -> list[ToolSpec]:
        return [self._outer_spec(t) for t in self.inner.tools_for(params)] + list(self.distractors.values())

    def system_prompt(self, params: Any) -> str:
        text = self.inner.system_prompt(params)
        for inner, outer in sorted(self.tool_names.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(inner, outer)
        return text

    def make_world(self, task: Task) -> World:
        return _TransformedWorld(self, self.inner.make_world(self._map_task(task, to_outer=False)))

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        assert isinstance(world, _TransformedWorld)
        return self.inner.score(self._map_task(task, to_outer=False), final_answer, world.inner)

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        reply = self.inner.oracle(self._map_task(task, to_outer=False), self._map_messages(messages), variant)
        calls = []
        for c in reply.tool_calls:
            name, args = self.outer_call(c.name, json.loads(c.arguments))
            calls.append(ToolCall.make(c.id, name, args))
        return reply.model_copy(update={"tool_calls": calls})


    def ends_episode(self, task: Task, tool: str) -> bool:
        return self.inner.ends_episode(self._map_task(task, to_outer=False), self._inner_tool.get(tool, tool))

    def collateral_scope(self, task: Task) -> CollateralScope | None:
        return self.inner.collateral_scope(self._map_task(task, to_outer=False))

    def collateral_call(self, task: Task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        call = self.inner.collateral_call(self._map_task(task, to_outer=False), self._map_messages(messages))
        return None if call is None else self.outer_call(*call)


class _TransformedWorld(World):
    def __init__(self, suite: TransformedSuite, inner: World):
        self.suite, self.inner = suite, inner
        self.events = inner.events

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name in self.suite.distractors:
            return {"result": f"{name} is not available for this request."}
        start = len(self.inner.events)
        try:
            return self.inner.call(*self.suite.inner_call(name, arguments))
        finally:
            # the inner world names its own tools in its events (a commit's "tool"); the metrics
            # compare them with the task's renamed commit targets and tool specs
            for event in self.inner.events[start:]:
                if "tool" in event:
                    event["tool"] = self.suite.tool_names.get(event["tool"], event["tool"])

    def snapshot(self) -> dict[str, Any]:
        return self.inner.snapshot()

    def close(self) -> None:
        self.inner.close()

    def end_instruction(self, index: int) -> None:
        self.inner.end_instruction(index)


def _parts(suite: Suite) -> tuple[Suite, dict[str, str], dict[str, dict[str, str]], list[ToolSpec]]:
    """(untransformed suite, tool renames, argument renames, distractors) — copies, safe to extend."""
    if isinstance(suite, TransformedSuite):
        return (suite.inner, dict(suite.tool_names), {k: dict(v) for k, v in suite.arg_names.items()},
                list(suite.distractors.values()))
    return suite, {}, {}, []


def rename_tools(suite: Suite, args: SeedArgs) -> Suite:
    rng = random.Random(args.seed)
    base, tools, arg_names, distractors = _parts(suite)
    for t in base.tools:
        tools[t.name] = rng.choice(TOOL_SYNONYMS.get(t.name, [f"{t.name}_tool"]))
    return _rebuild(suite, base, tools, arg_names, distractors,
                    {"schema_name": suite.manifest.topology.schema_name + "+renamed_tools"})


def rename_args(suite: Suite, args: SeedArgs) -> Suite:
    rng = random.Random(args.seed)
    base, tools, arg_names, distractors = _parts(suite)
    for t in base.tools:
        amap = arg_names.setdefault(t.name, {})
        for a in t.parameters.get("properties", {}):
            amap[a] = rng.choice(ARG_SYNONYMS.get(a, [f"{a}_value"]))
    return _rebuild(suite, base, tools, arg_names, distractors,
                    {"schema_name": suite.manifest.topology.schema_name + "+renamed_args"})


def distractor_tools(suite: Suite, args: DistractorArgs) -> Suite:
    n = args.n
    taken = {t.name for t in suite.tools}
    extra = [
        ToolSpec(name=name, description=desc, effect=Effect.read, idempotent=True, parallel_safe=True,
                 parameters={"type": "object", "properties": props, "required": list(props),
                             "additionalProperties": False})
        for name, desc, props in DISTRACTORS if name not in taken
    ][:n]
    base, tools, arg_names, distractors = _parts(suite)
    update = {"distractor_tools": suite.manifest.topology.distractor_tools + len(extra)}
    return _rebuild(suite, base, tools, arg_names, distractors + extra, update)


def _rebuild(suite: Suite, base: Suite, tools: dict[str, str], arg_names: dict[str, dict[str, str]],
             distractors: list[ToolSpec], update: dict[str, Any]) -> Suite:
    topology = {**suite.manifest.topology.model_dump(), **update}
    return TransformedSuite(base, tools, arg_names, distractors,
                            {k: v for k, v in topology.items() if v != getattr(base.manifest.topology, k)})


