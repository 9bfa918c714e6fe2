"""Multi-turn tasks in the training API: the env sends each instruction as an observation, reward()
replays whole conversations, and export carries the later instructions and the offered tools."""

import asyncio
import json

import datasets
import pytest

import topoeval
from topoeval.core.policy import EpisodeContext, SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.training.export import export_tasks

SEQUENTIAL = {"suite": "travel", "transforms": [{"name": "split_instructions"}]}


def play(env, seed):
    obs, info = env.reset(seed=seed)
    policy = make_policy("oracle")
    ctx = EpisodeContext(task=env.state.task, suite=env.topology.suite, sample=0, shots=0)
    observations, replies = [obs], []
    while True:
        reply = asyncio.run(policy.act(info["messages"], info["tools"], SamplingParams(), ctx))
        replies.append(reply.openai())
        obs, reward, terminated, truncated, info = env.step(reply.openai())
        observations.append(obs)
        if terminated or truncated:
            return reward, terminated, observations, replies, info


def test_env_sends_the_next_instruction_as_the_observation():
    env = topoeval.make_env(SEQUENTIAL, max_turns=20)
    for seed in range(3):
        reward, terminated, observations, replies, info = play(env, seed)
        assert (reward, terminated) == (1.0, True) and info["record"]["user_turns"] == 3
        handed_back = [obs for obs in observations if obs.startswith("[user]\n")]
        assert handed_back[-1] == "[user]\nNow book it." and len(handed_back) == 2
        task = env.state.task
        # reward() replays the same conversation (its assistant messages) to the same score
        assert topoeval.reward(task, replies, topology=SEQUENTIAL) == 1.0
        # stopping after the second instruction leaves the flight unbooked
        cut = replies[: next(i for i, r in enumerate(replies) if r.get("content") and "shall I book" in r["content"]) + 1]
        assert topoeval.reward(task, cut, topology=SEQUENTIAL) == 0.0


def test_export_rows_carry_later_instructions_and_the_tools_offered_at_the_start(tmp_path):
    proto = tmp_path / "p.yaml"
    proto.write_text(
        "name: seq\ntrain: {name: seq, suite: travel, transforms: [{name: split_instructions}]}\n"
        "test: [{name: seq, role: id, suite: travel, transforms: [{name: split_instructions}]}]\n"
        "tasks: {test: {n: 2}, train: {n: 3, seed: 5}}\n")
    export_tasks(proto, tmp_path / "out", split="train")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "train.parquet"), split="train")
    row = ds[0]
    later = json.loads(row["instructions"])
    assert [i["content"] for i in later][-1] == "Now book it." and len(later) == 2
    assert row["prompt"][-1]["content"].startswith("I'm planning a trip")
    assert topoeval.reward(row, [{"role": "assistant", "content": "ok"}]) == 0.0


def test_export_of_a_bfcl_task_offers_only_its_tools(tmp_path):
    pytest.importorskip("bfcl_eval")
    export_tasks("bfcl", tmp_path, split="train", n=2)
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "train.parquet"), split="train")
    for row in ds:
        task = json.loads(row["info"])["topoeval_task"]
        offered = {t["function"]["name"] for t in json.loads(row["tools"])}
        assert offered and not offered & set(task["withheld_tools"])
        assert len(json.loads(row["instructions"])) == len(task["instructions"])
    env = topoeval.make_env("bfcl", split="train", max_turns=60)
    reward, terminated, *_ = play(env, 0)
    assert (reward, terminated) == (1.0, True)
