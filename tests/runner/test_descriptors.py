"""Measured descriptors of a topology from its tasks (:mod:`topoeval.runner.descriptors`, #58)."""

import pytest

from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import Limits, TopologySpec
from topoeval.protocol.topology import resolve
from topoeval.runner.descriptors import measure


def measured(suite, params=None, transforms=()):
    spec = TopologySpec(name="t", suite=suite, params=params or {}, transforms=list(transforms))
    return measure(resolve(spec, SuiteRegistry()), seed=11, n=10, limits=Limits(max_turns=24, max_tool_calls=40))


@pytest.fixture(scope="module")
def travel():
    return measured("travel")


def test_travel_counts_its_tools_its_gold_plan_and_its_one_irreversible_commit(travel):
    assert travel["n_tasks"] == 10 and travel["tools_offered"] == 7
    assert travel["irreversible_per_task"] == 1.0 and 4 <= travel["gold_calls_mean"] <= 8
    assert 0 < travel["serial_share"] < 1 and travel["gold_calls_std"] > 0
    assert travel["observation_chars_per_turn"] > 50 and travel["prompt_tokens"] > 300 and "why" not in travel


def test_each_move_shows_in_the_descriptor_it_changes(travel):
    refundable = measured("travel", transforms=[{"name": "refundable"}])
    assert refundable["irreversible_per_task"] == 0.0  # nothing is irreversible any more
    serial = measured("travel", transforms=[{"name": "no_batch"}])
    assert serial["serial_share"] == 1.0  # one call a turn: every call waits
    distractors = measured("travel", transforms=[{"name": "distractor_tools", "args": {"n": 3}}])
    assert distractors["tools_offered"] == travel["tools_offered"] + 3
    assert distractors["prompt_tokens"] > travel["prompt_tokens"]
    merged = measured("travel", transforms=[{"name": "merge_hold_pay"}])
    assert merged["gold_calls_mean"] == pytest.approx(travel["gold_calls_mean"] - 1)  # hold + pay: one book


def test_wiki_is_read_only_and_its_chain_questions_are_serial():
    wiki = measured("wiki", {"question_types": ["chain"], "hops": [3]})
    assert wiki["irreversible_per_task"] == 0.0 and wiki["tools_offered"] == 2
    assert wiki["gold_calls_mean"] == 3.0 and wiki["gold_calls_std"] == 0.0
    assert wiki["serial_share"] == pytest.approx(2 / 3)  # each hop but the first waits for the one before
