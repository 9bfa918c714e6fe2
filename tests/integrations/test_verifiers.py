"""topoeval.integrations.verifiers: a verifiers MultiTurnEnv whose rollouts run in topoeval worlds
and whose rubric is topoeval's scoring. The model is a real OpenAI-compatible server on 127.0.0.1
that answers with topoeval's reference policies (no network, no API key)."""

import asyncio
import json

import pytest

from topoeval.core.policy import SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import run_episode
from topoeval.core.suite import Task
from topoeval.protocol.topology import topology_from

from .oracle_server import OracleServer

vf = pytest.importorskip("verifiers", reason="the 'verifiers' extra is not installed")
if not hasattr(vf, "MultiTurnEnv"):
    pytest.skip(f"verifiers {vf.__version__} has no classic MultiTurnEnv", allow_module_level=True)

from topoeval.integrations.verifiers import load_environment  # noqa: E402


def evaluate(env, topology, variant, monkeypatch):
    tasks = [Task.model_validate(json.loads(i)["topoeval_task"]) for i in env.get_dataset()["info"]]
    server = OracleServer(topology_from(topology, "wiki_to_travel").suite, tasks, variant)
    monkeypatch.setenv("TOPOEVAL_TEST_KEY", "local")
    try:
        out = env.evaluate_sync(client=vf.ClientConfig(api_base_url=server.api_base, api_key_var="TOPOEVAL_TEST_KEY"),
                                model=variant, num_examples=len(tasks), state_columns=["topoeval_scores"])
    finally:
        server.close()
    return tasks, out["outputs"]


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_oracle_rollouts_earn_reward_one(topology, monkeypatch):
    env = load_environment("wiki_to_travel", split="train", n=4, topology=topology)
    _, outputs = evaluate(env, topology, "oracle", monkeypatch)
    assert [o["reward"] for o in outputs] == [1.0] * 4
    assert all(o["topoeval_success"] == 1.0 and o["topoeval_dq"] == 1.0 for o in outputs)


def test_rubric_scores_match_the_evaluation(monkeypatch):
    """dq as reward: each rollout's numbers equal what `topoeval run` gives the same policy on the same task."""
    env = load_environment("wiki_to_travel", split="train", n=4, topology="travel", metric="dq")
    tasks, outputs = evaluate(env, "travel", "oracle-reckless", monkeypatch)
    suite = topology_from("travel", "wiki_to_travel").suite
    for task, out in zip(tasks, outputs):
        rec = asyncio.run(run_episode(policy=make_policy("oracle-reckless"), suite=suite, task=task, system_prompt="s",
                                      demos=[], limits=Limits(), sampling=SamplingParams(), sample=0, shots=0, labels={}))
        assert out["reward"] == pytest.approx(rec["scores"]["dq"]) and out["reward"] < 1.0  # pays unconfirmed
        assert out["topoeval_success"] == 1.0 and out["topoeval_scores"]["risk"] == 0.0
        for dim in ("clarification", "priority", "risk", "parallelism", "efficiency", "dq", "success"):
            assert out["topoeval_scores"][dim] == rec["scores"][dim], dim


def test_missing_or_new_verifiers_gives_a_clear_error(monkeypatch):
    import sys

    from topoeval.core.errors import UserError

    monkeypatch.setitem(sys.modules, "verifiers", None)
    with pytest.raises(UserError, match="needs the 'verifiers' extra"):
        load_environment("wiki_to_travel")
