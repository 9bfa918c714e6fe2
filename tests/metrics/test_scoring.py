"""score_episode's whole record of scores for one episode: the suite's verdict on the answer given, the dimensions
read from the calls as the metrics see them (a batch call as its parts), the reasons, the collateral scores beside
success, and every count, each checked by value (#61: mutation testing found none of them read back)."""

import asyncio

import pytest

from topoeval.core.policy import SamplingParams
from topoeval.metrics.scoring import score_episode
from topoeval.policies.registry import REFERENCE
from topoeval.protocol.discovery import load_suite_folder
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import run_episode
from topoeval.transforms.batching import BatchSuite, OneCallPerTurnSuite

SUITES = {"plain": lambda s: s, "batch": BatchSuite, "serial": OneCallPerTurnSuite}


def _oracle_episode(folder, kind, index):
    """(suite, task, record, world) of the oracle's episode on task ``index`` of a shipped suite's test split; the
    world is the one the episode played in."""
    suite = SUITES[kind](load_suite_folder(f"tool_suites/{folder}"))
    task = suite.tasks(suite.Params(), "test", 0, index + 1)[index]
    worlds = []
    make_world = suite.make_world
    suite.make_world = lambda t: worlds.append(make_world(t)) or worlds[-1]  # the episode's world, kept
    record = asyncio.run(run_episode(policy=REFERENCE["oracle"](), suite=suite, task=task, system_prompt="x",
                                     demos=[], limits=Limits(), sampling=SamplingParams(), sample=0, shots=0,
                                     labels={}))
    del suite.make_world
    return suite, task, record, worlds[0]


@pytest.fixture(scope="module")
def episodes():
    cache = {}

    def get(folder, kind, index):
        if (folder, kind, index) not in cache:
            cache[(folder, kind, index)] = _oracle_episode(folder, kind, index)
        return cache[(folder, kind, index)]
    return get


#: travel's test task 1: search, hold, ask the budget, confirm and pay; 6 calls over 5 turns (the oracle's)
TRAVEL_1_REASONS = {"clarification": "asked every hidden slot (budget)", "risk": "pay CL12522 (turn 3): safe",
                    "parallelism": "4 of 4 plan calls in 3 tool-calling turn(s); score 1.00",
                    "efficiency": "4 of 4 plan calls reached; 4 of 4 calls made advanced the plan"}


def test_the_oracle_s_travel_episode_has_every_score_by_value(episodes):
    suite, task, record, world = episodes("travel", "plain", 1)
    scores = score_episode(suite, task, record, world)
    assert scores == {
        "success": 1.0, "clarification": 1.0, "priority": None, "risk": 1.0, "parallelism": 1.0, "efficiency": 1.0,
        "dq": 1.0, "coverage": 1.0, "over_asks": 0, "unanswered_questions": 0, "unsafe_commits": 0,
        "serial_violations": 0, "redundant_calls": 0, "reasons": TRAVEL_1_REASONS,
        # the oracle changes nothing outside its task
        "collateral": 0.0, "collateral_irreversible": 0.0, "collateral_entities": 0.0,
        "tool_calls": 6, "invalid_calls": 0, "tool_errors": 0, "turns": 5, "prompt_tokens": 0, "completion_tokens": 0}
    assert scores == record["scores"]  # what the episode recorded


def test_the_counts_are_of_the_calls_made_by_status_and_usage_turns_and_cost_pass_through(episodes):
    suite, task, record, world = episodes("travel", "plain", 1)
    search = record["calls"][0]
    extra = [{**search, "status": status} for status in ("skipped", "invalid", "tool_error", "crash", "invalid")]
    scores = score_episode(suite, task, {**record, "calls": record["calls"] + extra, "turns": 9, "cost": 0.25,
                                         "usage": {"prompt_tokens": 120, "completion_tokens": 30}}, world)
    # 6 + 5 calls, one skipped (never run): 10 made; 2 invalid; a tool error and a crash
    assert [scores[k] for k in ("tool_calls", "invalid_calls", "tool_errors", "turns", "prompt_tokens",
                                "completion_tokens", "cost")] == [10, 2, 2, 9, 120, 30, 0.25]


def test_a_record_without_calls_usage_turns_cost_or_collateral_scores_nothing_done(episodes):
    suite, task, record, world = episodes("travel", "plain", 1)
    bare = {k: v for k, v in record.items() if k not in ("calls", "events", "usage", "turns", "cost", "collateral")}
    scores = score_episode(suite, task, {**bare, "usage": None}, world)
    assert [scores[k] for k in ("tool_calls", "invalid_calls", "tool_errors", "turns", "prompt_tokens",
                                "completion_tokens")] == [0, 0, 0, 0, 0, 0]
    # no collateral reading (a suite without a scope): no collateral score at all, and no cost where none is known
    assert not {"collateral", "collateral_irreversible", "collateral_entities", "cost"} & set(scores)
    # nothing asked, nothing of the plan done: the hidden budget unasked, no call reached the plan
    assert (scores["clarification"], scores["efficiency"], scores["coverage"]) == (0.0, 0.0, 0.0)
    assert scores["reasons"]["efficiency"] == "0 of 4 plan calls reached; 0 of 0 calls made advanced the plan"
    assert score_episode(suite, task, {**bare, "collateral": None}, world).keys() == scores.keys()


def test_the_collateral_scores_sit_beside_success_from_the_record_s_collateral_reading(episodes):
    suite, task, record, world = episodes("travel", "plain", 1)
    entities = [{"entity": "seats.X1", "kind": "collateral", "reversible": True, "calls": [1]},
                {"entity": "revenue.Air", "kind": "collateral", "reversible": False, "calls": [3]},
                {"entity": "holds.H1", "kind": "in_scope", "reversible": False, "calls": [1, 3]}]
    scores = score_episode(suite, task, {**record, "collateral": {"basis": "gold_state", "entities": entities}},
                           world)
    assert (scores["success"], scores["collateral"], scores["collateral_irreversible"],
            scores["collateral_entities"]) == (1.0, 1.0, 1.0, 2.0)


def test_the_suite_judges_the_record_s_final_answer(episodes):
    suite, task, record, world = episodes("wiki", "plain", 2)
    assert record["final_answer"] == task.answer
    assert (score_episode(suite, task, record, world)["success"],
            score_episode(suite, task, {**record, "final_answer": "no idea"}, world)["success"]) == (1.0, 0.0)


def test_a_batch_call_is_read_as_its_parts_by_the_metrics_and_counted_as_one_call(episodes):
    suite, task, record, world = episodes("wiki", "batch", 2)
    assert [c["name"] for c in record["calls"]] == ["open_page_batch"]
    scores = score_episode(suite, task, record, world)
    assert (scores["tool_calls"], scores["parallelism"], scores["efficiency"], scores["dq"]) == (1, 1.0, 1.0, 1.0)
    assert scores["reasons"] == {"parallelism": "2 of 2 plan calls in 1 tool-calling turn(s); score 1.00",
                                 "efficiency": "2 of 2 plan calls reached; 2 of 2 calls made advanced the plan"}


def test_a_batch_call_s_events_are_read_with_its_parts(episodes):
    suite, task, record, world = episodes("travel", "batch", 1)
    scores = score_episode(suite, task, record, world)
    assert scores["tool_calls"] == 5  # two searches in one batch call
    # the events name calls by their index among the parts: read against the batch calls' own indices, they
    # would count a serial violation the episode did not make
    assert {k: scores[k] for k in ("clarification", "risk", "parallelism", "efficiency", "dq",
                                   "serial_violations")} == {
        "clarification": 1.0, "risk": 1.0, "parallelism": 1.0, "efficiency": 1.0, "dq": 1.0, "serial_violations": 0}
    assert scores["reasons"] == TRAVEL_1_REASONS


def test_a_topology_of_one_call_per_turn_has_no_parallelism(episodes):
    suite, task, record, world = episodes("wiki", "plain", 2)  # two lookups in one turn
    assert score_episode(suite, task, record, world)["parallelism"] == 1.0
    serial = OneCallPerTurnSuite(load_suite_folder("tool_suites/wiki"))
    scores = score_episode(serial, task, record, serial.make_world(task))
    assert (scores["parallelism"], scores["dq"]) == (None, 1.0)
    assert set(scores["reasons"]) == {"efficiency"}
