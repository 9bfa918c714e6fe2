"""The travel suite: families, oracle/noop, the traveller, bad input and world invariants."""

import asyncio
import json
import random

import pytest

from topoeval.protocol.discovery import SuiteRegistry
from topoeval.core.gold import dag_width
from topoeval.core.policy import SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import run_episode
from topoeval.core.suite import SPLITS, ToolError


@pytest.fixture(scope="module")
def travel():
    return SuiteRegistry().get("travel")


@pytest.fixture(scope="module")
def tasks(travel):
    return travel.tasks(travel.parse_params({}), "test", 0, 250)


def rollout(suite, task, model):
    return asyncio.run(
        run_episode(policy=make_policy(model), suite=suite, task=task, system_prompt="s", demos=[], limits=Limits(),
                    sampling=SamplingParams(), sample=0, shots=0, labels={})
    )


def test_every_family_oracle_succeeds_noop_fails(travel, tasks):
    assert {t.family for t in tasks} == {"full", "underspecified", "tradeoff", "events", "flexible"}
    for task in tasks:
        good = rollout(travel, task, "oracle")
        assert good["scores"]["success"] == 1.0, task.id
        assert rollout(travel, task, "noop")["scores"]["success"] == 0.0, task.id
        asks = [e for e in good["events"] if e["type"] == "ask"]
        # the oracle asks exactly the hidden slots, and confirms the target before paying
        assert sorted(s for e in asks for s in e["slots"]) == sorted(task.hidden_slots)
        kinds = [e["type"] for e in good["events"] if e["type"] != "ask"]
        assert kinds == ["confirm", "commit"]
        assert good["events"][-2]["answer"] == "yes"


def test_oracle_searches_independent_dates_in_one_turn(travel, tasks):
    for task in (t for t in tasks if t.family == "flexible"):
        rec = rollout(travel, task, "oracle")
        turns = {c["turn"] for c in rec["calls"] if c["name"] == "search_flights"}
        assert len(turns) == 1 and dag_width(task.gold) >= 2


def test_family_properties(travel, tasks):
    for t in tasks:
        opts = t.options
        target = t.data["truth"]["target"]
        fully = [f for f, o in opts.items() if all(o.values())]
        if t.family == "tradeoff":
            assert t.trade_off and not fully and not t.hidden_slots
            assert opts[target][t.priority[0]]
        else:
            assert not t.trade_off and target in fully
        if t.family == "underspecified":
            assert 1 <= len(t.hidden_slots) <= 2
        if t.family == "events":
            assert any(g.tool == "get_city_events" for g in t.gold)
            search = [g for g in t.gold if g.tool == "search_flights"]
            assert all("events" in g.depends_on for g in search)


def test_priority_order_varies(tasks):
    orders = {tuple(t.priority) for t in tasks if t.family == "tradeoff"}
    assert len(orders) >= 4


def test_splits_disjoint_and_deterministic(travel):
    p = travel.parse_params({})
    prompts = {s: {t.prompt for t in travel.tasks(p, s, 0, 100)} for s in SPLITS}
    for i, a in enumerate(SPLITS):
        for b in SPLITS[i + 1:]:
            assert not prompts[a] & prompts[b]
    again = [t.model_dump_json() for t in SuiteRegistry().get("travel").tasks(p, "test", 0, 30)]
    assert again == [t.model_dump_json() for t in travel.tasks(p, "test", 0, 30)]


def world_for(travel, tasks, family="underspecified", **want):
    task = next(t for t in tasks if t.family == family and all(k in t.hidden_slots for k in want.get("hidden", [])))
    return task, travel.make_world(task)


def test_traveller_answers_only_the_asked_slot(travel, tasks):
    task, world = world_for(travel, tasks, hidden=["budget"])
    answer = world.call("ask_user", {"question": "What is your budget?"})
    assert f"${task.hidden_slots['budget']}" in answer and "airline" not in answer.lower()
    assert world.events[-1] == {"type": "ask", "slots": ["budget"], "question": "What is your budget?"}
    assert world.call("ask_user", {"question": "Do you like music?"}) == "I'm not sure what you mean."
    assert world.events[-1]["slots"] == []
    world.call("ask_user", {"question": "Where are you flying from, i.e. your origin?"})
    assert world.events[-1]["slots"] == ["route"]


def test_traveller_confirms_what_the_hidden_constraints_allow(travel, tasks):
    task, world = world_for(travel, tasks, hidden=["budget"])
    target = task.data["truth"]["target"]
    over = next(f for f, ok in task.options.items() if not ok["budget"])
    assert world.call("ask_user", {"question": f"Shall I book {over}?"}) == "No."
    assert world.events[-1] == {"type": "confirm", "object": over, "answer": "no"}
    hold = world.call("hold_seat", {"flight_id": target})
    assert world.call("ask_user", {"question": f"OK to pay {hold['hold_id']}?"}) == "Yes, go ahead."
    assert world.events[-1] == {"type": "confirm", "object": target, "answer": "yes"}
    # with nothing hidden the traveller does not re-judge stated wishes: any real option is confirmed
    task, world = world_for(travel, tasks, family="tradeoff")
    other = next(f for f in task.options if f != task.data["truth"]["target"])
    assert world.call("ask_user", {"question": f"Book {other}?"}) == "Yes, go ahead."


def test_bad_calls_are_clear_errors(travel, tasks):
    task, world = world_for(travel, tasks, family="full")
    target = task.data["truth"]["target"]
    with pytest.raises(ToolError, match="unknown flight"):
        world.call("hold_seat", {"flight_id": "ZZ00000"})
    with pytest.raises(ToolError, match="YYYY-MM-DD"):
        world.call("search_flights", {"origin": "a", "destination": "b", "date": "next friday"})
    with pytest.raises(ToolError, match="not a calendar date"):
        world.call("search_flights", {"origin": "a", "destination": "b", "date": "2027-02-30"})
    with pytest.raises(ToolError, match="unknown hold"):
        world.call("pay", {"hold_id": "H9"})
    h = world.call("hold_seat", {"flight_id": target})["hold_id"]
    booking = world.call("pay", {"hold_id": h})["booking_id"]
    with pytest.raises(ToolError, match="is paid"):
        world.call("pay", {"hold_id": h})  # paying twice
    h2 = world.call("hold_seat", {"flight_id": target})["hold_id"]
    world.call("release_hold", {"hold_id": h2})
    with pytest.raises(ToolError, match="is released"):
        world.call("pay", {"hold_id": h2})
    world.call("cancel_booking", {"booking_id": booking})
    with pytest.raises(ToolError, match="already cancelled"):
        world.call("cancel_booking", {"booking_id": booking})


def test_holds_expire(travel, tasks):
    task, world = world_for(travel, tasks, family="full")
    h = world.call("hold_seat", {"flight_id": task.data["truth"]["target"]})["hold_id"]
    for _ in range(task.data["hold_ttl"] + 1):
        world.call("ask_user", {"question": "hello?"})
    with pytest.raises(ToolError, match="is expired"):
        world.call("pay", {"hold_id": h})


def check_invariants(task, world):
    snap = world.snapshot()
    assert all(n >= 0 for n in snap["seats"].values())
    assert snap["balance"] + sum(snap["revenue"].values()) == task.data["balance"]  # money is conserved
    initial = {f["flight_id"]: f["seats_left"] for f in task.data["flights"]}
    for fid, n in snap["seats"].items():
        taken = sum(1 for h in snap["holds"].values() if h["flight"] == fid and h["status"] == "active")
        taken += sum(1 for b in snap["bookings"].values() if b["flight"] == fid and b["status"] == "paid")
        assert n + taken == initial[fid]
    paid_holds = [b["hold"] for b in snap["bookings"].values()]
    assert len(paid_holds) == len(set(paid_holds))  # every payment belongs to exactly one booking
    for b in snap["bookings"].values():
        assert snap["holds"][b["hold"]]["status"] == "paid"


def test_world_invariants_under_random_call_sequences(travel, tasks):
    rng = random.Random(0)
    tools = ["search_flights", "hold_seat", "release_hold", "pay", "cancel_booking", "ask_user"]
    for task in tasks[:60]:
        world = travel.make_world(task)
        flights = [f["flight_id"] for f in task.data["flights"]] + ["XX12345"]
        for _ in range(60):
            name = rng.choice(tools)
            ids = {"hold": list(world.holds) + ["H99"], "booking": list(world.bookings) + ["B99"]}
            args = {
                "search_flights": {"origin": task.data["truth"]["origin"], "destination": task.data["truth"]["destination"],
                                   "date": rng.choice(task.data["truth"]["candidate_dates"])},
                "hold_seat": {"flight_id": rng.choice(flights)},
                "release_hold": {"hold_id": rng.choice(ids["hold"])},
                "pay": {"hold_id": rng.choice(ids["hold"])},
                "cancel_booking": {"booking_id": rng.choice(ids["booking"])},
                "ask_user": {"question": rng.choice(["budget?", f"confirm {rng.choice(flights)}?"])},
            }[name]
            try:
                world.call(name, args)
            except ToolError:
                pass
            check_invariants(task, world)


def test_success_needs_exactly_one_payment_on_the_target(travel, tasks):
    task, world = world_for(travel, tasks, family="full")
    target = task.data["truth"]["target"]
    h = world.call("hold_seat", {"flight_id": target})["hold_id"]
    b = world.call("pay", {"hold_id": h})["booking_id"]
    assert travel.score(task, "done", world)["success"] == 1.0
    world.call("cancel_booking", {"booking_id": b})
    h = world.call("hold_seat", {"flight_id": target})["hold_id"]
    world.call("pay", {"hold_id": h})
    assert travel.score(task, "done", world)["success"] == 0.0  # a second payment (and a fee) happened
    task, world = world_for(travel, tasks, family="full")
    target = task.data["truth"]["target"]
    world.call("hold_seat", {"flight_id": target})
    h = world.call("hold_seat", {"flight_id": target})["hold_id"]
    world.call("pay", {"hold_id": h})
    assert travel.score(task, "done", world)["success"] == 0.0  # a hold left active


def test_observations_are_json(travel, tasks):
    rec = rollout(travel, tasks[0], "oracle")
    for m in rec["messages"]:
        if m["role"] == "tool" and m["name"] != "ask_user":
            json.loads(m["content"])


def test_the_rationale_before_a_hold_names_the_target_field_by_field(travel, tasks):
    """Suite.rationale: on every family, the line before the oracle's hold names the target's airline,
    date, price and, last, its id; other calls, and a flight that is not the task's, get none."""
    families = set()
    for task in tasks[:60]:
        record = rollout(travel, task, "oracle")
        turns = [m for m in record["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
        lines = [travel.rationale(task, [], m["tool_calls"]) for m in turns]
        holds = [i for i, m in enumerate(turns) if m["tool_calls"][0]["function"]["name"] == "hold_seat"]
        assert len(holds) == 1 and [i for i, line in enumerate(lines) if line] == holds
        t = next(f for f in task.data["flights"] if f["flight_id"] == task.data["truth"]["target"])
        assert lines[holds[0]] == f"Cheapest best fit: {t['airline']}, {t['date']}, ${t['price']}: {t['flight_id']}."
        families.add(task.family)
    assert families == {"full", "underspecified", "tradeoff", "events", "flexible"}
    other = {"function": {"name": "hold_seat", "arguments": json.dumps({"flight_id": "NOPE1"})}}
    assert travel.rationale(tasks[0], [], [other]) is None
