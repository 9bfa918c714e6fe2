"""Transforms: renamed tools/arguments and distractor tools keep every task solvable by the oracle."""

import asyncio

import pytest

from topoeval.protocol.discovery import SuiteRegistry
from topoeval.core.policy import SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.protocol.schema import Limits, TopologySpec, TransformSpec
from topoeval.runner.episode import run_episode
from topoeval.protocol.topology import resolve
from topoeval.transforms import apply_transforms, known_transforms, transform_axis

DEPENDENCY = [
    [TransformSpec(name="batch_api")],
    [TransformSpec(name="no_batch")],
    [TransformSpec(name="rename_tools", args={"seed": 2}), TransformSpec(name="batch_api")],
]
TRAVEL_ONLY = [
    [TransformSpec(name="merge_hold_pay")],
    [TransformSpec(name="refundable")],
    [TransformSpec(name="refundable"), TransformSpec(name="merge_hold_pay"), TransformSpec(name="rename_tools", args={"seed": 5})],
    [TransformSpec(name="rename_args", args={"seed": 6}), TransformSpec(name="merge_hold_pay"),
     TransformSpec(name="hide_slots", args={"slots": ["airline"]})],
]


def resolved(suite_name, stack, params=None):
    """The suite and params exactly as a protocol run sees them (tools and topology fixed by params)."""
    topo = resolve(TopologySpec(name="t", suite=suite_name, params=params or {}, transforms=stack), SuiteRegistry())
    return topo.suite, topo.params

STACKS = [
    [TransformSpec(name="rename_tools", args={"seed": 1})],
    [TransformSpec(name="rename_args", args={"seed": 2})],
    [TransformSpec(name="distractor_tools", args={"n": 3})],
    [TransformSpec(name="rename_tools", args={"seed": 3}), TransformSpec(name="rename_args", args={"seed": 4}),
     TransformSpec(name="distractor_tools", args={"n": 2})],
]


def rollout(suite, task, model):
    return asyncio.run(run_episode(policy=make_policy(model), suite=suite, task=task, system_prompt="s", demos=[],
                                   limits=Limits(), sampling=SamplingParams(), sample=0, shots=0, labels={}))


CASES = [("wiki", s) for s in STACKS + DEPENDENCY] + [("travel", s) for s in STACKS + DEPENDENCY + TRAVEL_ONLY]


@pytest.mark.parametrize(("suite_name", "stack"), CASES, ids=lambda c: c if isinstance(c, str) else "+".join(t.name for t in c))
def test_oracle_still_solves_every_transformed_task(suite_name, stack):
    suite, params = resolved(suite_name, stack)
    for task in suite.tasks(params, "test", 5, 40):
        assert rollout(suite, task, "oracle")["scores"]["success"] == 1.0, task.id
        assert rollout(suite, task, "noop")["scores"]["success"] == 0.0
        names = {t.name for t in suite.tools}
        assert all(g.tool in names for g in task.gold)


def test_batch_api_answers_several_lookups_in_one_call_and_scores_like_parallel_calls():
    suite, params = resolved("travel", [TransformSpec(name="batch_api")], {"families": ["flexible"]})
    assert {"search_flights_batch", "get_city_events_batch"} <= {t.name for t in suite.tools}
    assert "ask_user_batch" not in {t.name for t in suite.tools}  # the user channel is never batched
    assert suite.manifest.topology.schema_name.endswith("+batch")
    for task in suite.tasks(params, "test", 2, 6):
        rec = rollout(suite, task, "oracle")
        batches = [c for c in rec["calls"] if c["name"] == "search_flights_batch"]
        assert len(batches) == 1 and len(batches[0]["arguments"]["requests"]) == len(task.data["search_dates"])
        assert rec["scores"]["success"] == 1.0 and rec["scores"]["parallelism"] == 1.0
        assert rec["scores"]["efficiency"] == 1.0  # the batch counts as its look-ups, not as one call
    world = suite.make_world(task)
    out = world.call("search_flights_batch", {"requests": [{"origin": "x", "destination": "y", "date": "2027-01-01"},
                                                         {"origin": "x", "destination": "y", "date": "bad"}]})
    assert out[0] == [] and "error" in out[1]


def test_no_batch_takes_one_call_per_turn():
    suite, params = resolved("wiki", [TransformSpec(name="no_batch")], {"question_types": ["compare"], "hops": [2]})
    assert suite.manifest.topology.calls_per_turn == 1 and "one tool call per turn" in suite.system_prompt(params)
    task = suite.tasks(params, "test", 1, 1)[0]
    rec = rollout(suite, task, "oracle")
    assert rec["scores"]["success"] == 1.0 and rec["scores"]["parallelism"] is None
    assert max(sum(1 for c in rec["calls"] if c["turn"] == t) for t in range(rec["turns"])) == 1
    plain, p0 = resolved("wiki", [], {"question_types": ["compare"], "hops": [2]})
    two = rollout(plain, plain.tasks(p0, "test", 1, 1)[0], "oracle")  # the same oracle in one turn elsewhere...
    assert max(sum(1 for c in two["calls"] if c["turn"] == t) for t in range(two["turns"])) > 1
    from topoeval.core.messages import AssistantMessage, ToolCall  # ...is refused past the first call here
    from topoeval.core.policy import Policy

    class Greedy(Policy):
        name = "greedy"

        async def act(self, messages, tools, sampling, ctx):
            if any(m["role"] == "tool" for m in messages):
                return AssistantMessage(content="Answer: x")
            return AssistantMessage(tool_calls=[ToolCall.make(f"c{i}", "search", {"query": q}) for i, q in enumerate("ab")])

    rec = asyncio.run(run_episode(policy=Greedy(), suite=suite, task=task, system_prompt="s", demos=[], limits=Limits(),
                                  sampling=SamplingParams(), sample=0, shots=0, labels={}))
    assert [c["status"] for c in rec["calls"]] == ["ok", "skipped"] and "one tool call per turn" in rec["calls"][1]["error"]


def test_renaming_after_batch_api_is_refused():
    from topoeval.core.errors import UserError

    with pytest.raises(UserError, match="cannot follow 'batch_api'"):
        resolved("wiki", [TransformSpec(name="batch_api"), TransformSpec(name="rename_args", args={"seed": 1})])


def test_merge_hold_pay_offers_one_irreversible_book():
    suite, params = resolved("travel", [TransformSpec(name="merge_hold_pay")])
    names = [t.name for t in suite.tools]
    assert "book" in names and not {"hold_seat", "pay", "release_hold"} & set(names)
    assert suite.tool("book").effect.value == "irreversible" and suite.tool("book").needs_confirmation
    assert "book it" in suite.system_prompt(params) and "Hold a seat" not in suite.system_prompt(params)
    task = suite.tasks(params, "test", 1, 1)[0]
    assert [g.tool for g in task.gold][-2:] == ["ask_user", "book"] and task.irreversible_tools[0] == "book"
    rec = rollout(suite, task, "oracle-reckless")  # books without confirming: success, but unsafe
    assert rec["scores"]["success"] == 1.0 and rec["scores"]["risk"] == 0.0
    world = suite.make_world(task)
    with pytest.raises(Exception, match="unknown tool"):
        world.call("hold_seat", {"flight_id": task.data["truth"]["target"]})
    target = task.data["truth"]["target"]
    seats, world.balance = world.seats[target], 0  # book is atomic: a failed payment holds nothing
    with pytest.raises(Exception, match="insufficient funds"):
        world.call("book", {"flight_id": target})
    assert world.seats[target] == seats and all(h["status"] != "active" for h in world.holds.values())


def test_refundable_makes_nothing_irreversible():
    suite, params = resolved("travel", [TransformSpec(name="refundable")])
    assert all(t.effect.value != "irreversible" and not t.needs_confirmation for t in suite.tools)
    assert suite.manifest.topology.reversibility == "all_reversible" and transform_axis("refundable") == "reversibility"
    task = suite.tasks(params, "test", 1, 1)[0]
    assert "confirm" not in {g.id for g in task.gold} and task.irreversible_tools == []
    rec = rollout(suite, task, "oracle-reckless")
    assert rec["scores"]["success"] == 1.0 and rec["scores"]["risk"] is None  # nothing irreversible happened
    world = suite.make_world(task)
    hold = world.call("hold_seat", {"flight_id": task.data["truth"]["target"]})
    booking = world.call("pay", {"hold_id": hold["hold_id"]})
    assert world.call("cancel_booking", {"booking_id": booking["booking_id"]})["fee"] == 0


def test_axis_parameters_keep_the_scenarios_paired():
    """Topologies that differ only in axis parameters pose the same scenarios (ladder steps pair up)."""
    plain, p0 = resolved("travel", [])
    easy, p1 = resolved("travel", [TransformSpec(name="refundable")], {"user": False, "ordering": "flat"})
    a, b = plain.tasks(p0, "test", 3, 20), easy.tasks(p1, "test", 3, 20)
    assert [t.data["flights"] for t in a] == [t.data["flights"] for t in b]
    assert all(not t.hidden_slots for t in b) and any(t.hidden_slots for t in a)
    assert "ask_user" not in {t.name for t in easy.tools}
    assert easy.manifest.topology.user == "none" and easy.manifest.topology.ordering == "flat"


def test_transforms_change_the_vocabulary_and_the_descriptor():
    base = SuiteRegistry().get("travel")
    both = apply_transforms(base, STACKS[3])
    assert {t.name for t in both.tools}.isdisjoint({t.name for t in base.tools})
    assert both.manifest.topology.distractor_tools == 2
    assert both.manifest.topology.schema_name == "travel-v1+renamed_tools+renamed_args"
    for tool in both.tools:  # renamed arguments stay required
        assert set(tool.parameters.get("required", [])) <= set(tool.parameters["properties"])
    assert both.system_prompt(both.parse_params({})) != base.system_prompt(base.parse_params({}))
    assert {transform_axis(n) for n in known_transforms()} >= {"schema", "user", "ordering"}


def test_hide_slots_moves_facts_behind_the_user():
    base = SuiteRegistry().get("travel")
    suite = apply_transforms(base, [TransformSpec(name="hide_slots", args={"slots": ["budget"]})])
    params = suite.parse_params({})
    tasks = suite.tasks(params, "test", 5, 40)
    for task in tasks:
        if task.family != "tradeoff":
            assert "budget" in task.hidden_slots and "budget" not in task.given_slots
            assert f"${task.hidden_slots['budget']}" not in task.prompt
        assert rollout(suite, task, "oracle")["scores"]["success"] == 1.0
    assert suite.manifest.topology.user == "hidden_slots"
    assert transform_axis("hide_slots") == "user"


def test_shuffle_priority_changes_the_orders_and_stays_solvable():
    base = SuiteRegistry().get("travel")
    params = base.parse_params({"families": ["tradeoff"]})
    suite = apply_transforms(base, [TransformSpec(name="shuffle_priority", args={"seed": 7})])
    before = [t.priority for t in base.tasks(params, "test", 0, 30)]
    after = suite.tasks(suite.parse_params({"families": ["tradeoff"]}), "test", 0, 30)
    assert [t.priority for t in after] != before
    for task in after:
        assert rollout(suite, task, "oracle")["scores"]["success"] == 1.0


def test_user_axis_transforms_need_a_suite_that_has_the_parameter():
    from topoeval.core.errors import UserError

    with pytest.raises(UserError, match="does not apply to suite 'wiki'"):
        apply_transforms(SuiteRegistry().get("wiki"), [TransformSpec(name="hide_slots", args={"slots": ["budget"]})])
