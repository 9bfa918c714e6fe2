"""topoeval.reward: a finished trajectory scored exactly as the evaluation scores it."""

import pytest

import topoeval
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.core.errors import UserError
from topoeval.policies.registry import make_policy
from topoeval.protocol.schema import Limits
from topoeval.core.policy import SamplingParams
from topoeval.runner.episode import run_episode

import asyncio


def episode(suite_name, model, index=0):
    suite = SuiteRegistry().get(suite_name)
    params = suite.parse_params({})
    task = suite.generate(params, "test", 4, index)
    rec = asyncio.run(run_episode(policy=make_policy(model), suite=suite, task=task, system_prompt="s", demos=[],
                                  limits=Limits(), sampling=SamplingParams(), sample=0, shots=0, labels={}))
    return task, rec


@pytest.mark.parametrize("model", ["oracle", "oracle-reckless", "oracle-no-ask", "oracle-serial", "noop"])
@pytest.mark.parametrize("suite_name", ["wiki", "travel"])
def test_reward_equals_the_evaluation_score(suite_name, model):
    for index in range(3):
        task, rec = episode(suite_name, model, index)
        scores = topoeval.reward(task, rec["messages"], metric="all")
        for metric in ("success", "dq", "clarification", "priority", "risk", "parallelism", "efficiency"):
            assert scores[metric] == rec["scores"][metric], (metric, task.id)
        assert topoeval.reward(task.model_dump(mode="json"), rec["messages"]) == rec["scores"]["success"]


def test_tool_results_in_the_trajectory_are_recomputed_not_trusted():
    task, rec = episode("travel", "oracle-no-ask", 1)
    forged = [dict(m, content="Yes, go ahead.") if m["role"] == "tool" else m for m in rec["messages"]]
    assert topoeval.reward(task, forged) == rec["scores"]["success"]


def test_weighted_rewards_and_unknown_metrics():
    task, rec = episode("travel", "oracle-reckless")
    mix = topoeval.reward(task, rec["messages"], metric={"success": 0.5, "dq": 0.5})
    assert mix == pytest.approx(0.5 * rec["scores"]["success"] + 0.5 * rec["scores"]["dq"])
    with pytest.raises(UserError, match="unknown reward metric"):
        topoeval.reward(task, rec["messages"], metric="sucess")
