"""Planted reference policies: the oracle with a weakness on one known axis, by name (#58)."""

import asyncio

import pytest

from topoeval.core.policy import EpisodeContext, SamplingParams
from topoeval.policies.reference import PLANTED, PLANTED_SIZE, PlantedPolicy, planted_weaknesses
from topoeval.policies.registry import is_reference, make_policy
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import TopologySpec
from topoeval.protocol.topology import resolve


@pytest.mark.parametrize("name,weaknesses", [
    ("planted-format", ("format",)), ("planted-format+merged", ("format", "merged")),
    ("planted-formt", None), ("planted-format+format", None), ("oracle", None), ("planted-", None),
])
def test_a_planted_name_lists_its_weaknesses_and_an_unknown_one_is_no_planted_policy(name, weaknesses):
    assert planted_weaknesses(name) == weaknesses
    assert is_reference(name) is (weaknesses is not None or name == "oracle")


def test_any_combination_of_planted_weaknesses_makes_a_policy_named_as_asked():
    policy = make_policy("planted-schema+user")
    assert isinstance(policy, PlantedPolicy) and policy.name == "planted-schema+user"
    assert policy.weaknesses == ("schema", "user") and policy.size == PLANTED_SIZE
    assert set(PLANTED) == {"format", "schema", "user", "merged", "ordering", "dependency", "instructions"}


def first_turn(policy, spec: TopologySpec, index: int):
    topo = resolve(spec, SuiteRegistry())
    task = topo.tasks("test", 3, index + 1)[index]
    tools = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in topo.suite.tools]
    messages = [{"role": "system", "content": topo.system_prompt()}, {"role": "user", "content": task.prompt}]
    ctx = EpisodeContext(task=task, suite=topo.suite, sample=0, shots=0)
    return task, asyncio.run(policy.act(messages, tools, SamplingParams(), ctx))


@pytest.mark.parametrize("weakness,moved", [
    ("merged", TopologySpec(name="t", suite="travel", transforms=[{"name": "merge_hold_pay"}])),
    ("format", TopologySpec(name="t", suite="travel", transforms=[{"name": "tool_format",
                                                                  "args": {"format": "hermes"}}])),
    ("user", TopologySpec(name="t", suite="travel", params={"user": False})),
    ("schema", TopologySpec(name="t", suite="travel", transforms=[{"name": "rename_tools"}])),
])
def test_it_gives_up_on_its_share_of_tasks_only_where_its_axis_moved(weakness, moved):
    policy = PlantedPolicy((weakness,))
    base = TopologySpec(name="t", suite="travel")
    gave_up = []
    for index in range(12):
        _, at_base = first_turn(policy, base, index)
        task, there = first_turn(policy, moved, index)
        assert at_base.tool_calls  # on its own topology it is the oracle
        gave_up.append(not there.tool_calls and not there.content)
        assert gave_up[-1] is policy.gives_up(weakness, task)  # the seeded draw, and nothing else, decides
    assert 0 < sum(gave_up) < 12
