"""make_env: a Gymnasium-style env over any topology, stepping the same episode state the runner uses."""

import asyncio
import subprocess
import sys

import pytest

import topoeval
from topoeval.core.policy import EpisodeContext, SamplingParams
from topoeval.policies.registry import make_policy


def play(env, model="oracle", seed=0):
    obs, info = env.reset(seed=seed)
    policy = make_policy(model)
    ctx = EpisodeContext(task=env.state.task, suite=env.topology.suite, sample=0, shots=0)
    while True:
        reply = asyncio.run(policy.act(info["messages"], info["tools"], SamplingParams(), ctx))
        obs, reward, terminated, truncated, info = env.step(reply.openai())
        if terminated or truncated:
            return reward, terminated, truncated, info


@pytest.mark.parametrize("topology", ["wiki", "travel", {"suite": "travel", "transforms": [{"name": "merge_hold_pay"}]}])
def test_oracle_episodes_end_with_reward_one(topology):
    env = topoeval.make_env(topology)
    for seed in range(4):
        reward, terminated, truncated, info = play(env, seed=seed)
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["scores"]["success"] == 1.0 and info["record"]["status"] == "done"


def test_observations_are_text_and_info_carries_tools_and_messages():
    env = topoeval.make_env("travel", split="dev", max_turns=3)
    obs, info = env.reset(seed=2)
    assert obs.startswith("[system]\n") and "[user]\n" in obs
    assert {t["function"]["name"] for t in info["tools"]} >= {"search_flights", "pay"}
    # a prompt-tools string action: one malformed call becomes an error observation, not an exception
    obs, reward, terminated, truncated, info = env.step('<tool_call>{"name": "pay", "arguments": {"hold_id": 5}}</tool_call>')
    assert obs.startswith("[tool pay]") and "error" in obs and not terminated and reward == 0.0
    env.step({"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "nope", "arguments": "{}"}}]})
    obs, reward, terminated, truncated, info = env.step({"role": "assistant", "content": None, "tool_calls": [
        {"id": "b", "type": "function", "function": {"name": "ask_user", "arguments": '{"question": "budget?"}'}}]})
    assert truncated and not terminated and reward == 0.0 and info["scores"]["success"] == 0.0
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step("done")


def test_reward_argument_chooses_the_metric():
    env = topoeval.make_env("travel", reward={"success": 0.5, "dq": 0.5})
    reward, *_ = play(env, model="oracle-reckless", seed=0)  # succeeds, but pays unconfirmed
    assert 0.5 < reward < 1.0


def test_a_protocol_topology_by_name_and_a_registered_gymnasium_env():
    gymnasium = pytest.importorskip("gymnasium")
    env = gymnasium.make("topoeval/Topology-v0", topology="travel-irreversible", protocol="wiki_to_travel_ladder",
                         disable_env_checker=True)
    assert isinstance(env.unwrapped, gymnasium.Env)
    obs, info = env.reset(seed=1)
    assert "cannot be undone" in obs
    with pytest.raises(Exception, match="no topology 'nope'"):
        topoeval.make_env("nope", protocol="wiki_to_travel_ladder")


def test_works_without_gymnasium():
    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import topoeval\n"
            "env = topoeval.make_env('wiki')\n"
            "obs, info = env.reset(seed=0)\n"
            "assert type(env).__mro__[1] is object\n"
            "o, r, term, trunc, info = env.step({'role': 'assistant', 'content': 'Answer: no idea'})\n"
            "assert term and r == 0.0\n")
    subprocess.run([sys.executable, "-c", code], check=True)
