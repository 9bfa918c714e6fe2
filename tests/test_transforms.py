"""Transforms: renamed tools/arguments and distractor tools keep every task solvable by the oracle."""

import asyncio

import pytest

from topoeval.discovery import SuiteRegistry
from topoeval.policies.base import SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.protocol import Limits, TransformSpec
from topoeval.runner.episode import run_episode
from topoeval.transforms import apply_transforms, known_transforms, transform_axis

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


@pytest.mark.parametrize("suite_name", ["wiki", "travel"])
@pytest.mark.parametrize("stack", STACKS, ids=lambda s: "+".join(t.name for t in s))
def test_oracle_still_solves_every_transformed_task(suite_name, stack):
    base = SuiteRegistry().get(suite_name)
    suite = apply_transforms(base, stack)
    params = suite.parse_params({})
    for task in suite.tasks(params, "test", 5, 40):
        assert rollout(suite, task, "oracle")["scores"]["success"] == 1.0, task.id
        assert rollout(suite, task, "noop")["scores"]["success"] == 0.0
        names = {t.name for t in suite.tools}
        assert all(g.tool in names for g in task.gold)


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
    from topoeval.errors import UserError

    with pytest.raises(UserError, match="does not apply to suite 'wiki'"):
        apply_transforms(SuiteRegistry().get("wiki"), [TransformSpec(name="hide_slots", args={"slots": ["budget"]})])
