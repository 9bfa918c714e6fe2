"""topoeval.integrations.skyrl: skyrl-gym 0.4.0's real env API — the env made by ``skyrl_gym.make("topoeval",
env_config=..., extras=...)`` from the rows of ``topoeval export --for skyrl`` (extras = every column but
prompt and env_class, as SkyRL's PromptDataset hands them), driven by scripted model text.

Runs in .venv-skyrl (`make test-adapters` builds it: skyrl-gym==0.4.0); skipped where skyrl-gym is absent."""

from __future__ import annotations

import json

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the 'skyrl' extra is not installed (make test runs this file "
                                                    "in .venv-skyrl)")

from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402

import topoeval  # noqa: E402
from topoeval.core.errors import UserError  # noqa: E402
from topoeval.integrations.skyrl import TopoevalTextEnv  # noqa: E402

from .verl_fixtures import conversation_row, export, scripted  # noqa: E402


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return export(tmp_path_factory.mktemp("skyrl"), "skyrl")


def make(row: dict) -> BaseTextEnv:
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    return skyrl_gym.make(row["env_class"], env_config={}, extras=extras)


def play(row: dict, texts: list[str]) -> tuple[BaseTextEnv, list[dict], list]:
    """One episode; returns the env, the conversation as SkyRL builds it, and every step output."""
    env = make(row)
    prompt, meta = env.init(row["prompt"])
    assert prompt == row["prompt"] and meta["topology"] == row["data_source"]
    conversation, outputs = list(prompt), []
    for text in texts:
        out = env.step(text)
        outputs.append(out)
        conversation += [{"role": "assistant", "content": text}, *out["observations"]]
        if out["done"]:
            break
    return env, conversation, outputs


def trajectory(env: TopoevalTextEnv, conversation: list[dict]) -> list[dict]:
    """The conversation's assistant turns read in the row's format, after the task's user message."""
    ep = env.episode
    return [{"role": "user", "content": ep.task.prompt},
            *[ep.parse(m["content"]).openai() for m in conversation if m["role"] == "assistant"]]


def test_registered_as_topoeval(rows):
    assert "topoeval" in skyrl_gym.registry
    assert all(r["env_class"] == "topoeval" for rs in rows.values() for r in rs)
    assert isinstance(make(rows["wiki"][0]), TopoevalTextEnv)


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_oracle_episode_reward_one_equals_topoeval_reward(rows, topology):
    row = rows[topology][0]
    env, conversation, outputs = play(row, scripted(row["extra_info"]))
    last = outputs[-1]
    print(f"\n{topology}: {len(outputs)} steps, reward {last['reward']}, status {last['metadata']['status']}")
    for m in conversation[1:]:
        print(f"  {m['role']:9s} {m['content'][:110]!r}")
    assert last["done"] and last["reward"] == 1.0 and [o["reward"] for o in outputs[:-1]] == [0.0] * (len(outputs) - 1)
    task = json.loads(row["extra_info"]["topoeval_task"])
    spec = json.loads(row["extra_info"]["topology_spec"])
    assert topoeval.reward(task, trajectory(env, conversation), topology=spec) == last["reward"]
    assert last["metadata"]["scores"]["success"] == 1.0 and env.get_metrics()["topoeval/success"] == 1.0
    assert all(o["role"] == "user" for out in outputs for o in out["observations"])


def test_the_travellers_answer_is_a_user_turn(rows):
    row = rows["travel"][0]
    _, conversation, _ = play(row, scripted(row["extra_info"]))
    answers = [m for m in conversation if 'name="ask_user"' in m["content"] and m["role"] != "assistant"]
    assert answers and all(m["role"] == "user" for m in answers)


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_noop_reward_zero(rows, topology):
    row = rows[topology][1]
    _, _, outputs = play(row, [""])
    assert outputs[-1]["done"] and outputs[-1]["reward"] == 0.0


def test_a_malformed_call_is_a_recorded_invalid_call(rows):
    row = rows["wiki"][0]
    env, conversation, outputs = play(row, ['<tool_call>{"name": "search", "arguments": {oops</tool_call>', "no idea"])
    assert not outputs[0]["done"] and "not valid JSON" in outputs[0]["observations"][0]["content"]
    assert outputs[-1]["done"] and outputs[-1]["metadata"]["scores"]["invalid_calls"] == 1
    assert env.get_metrics()["topoeval/invalid_calls"] == 1.0


def test_native_format_is_refused_with_one_line(tmp_path):
    with pytest.raises(UserError, match="prompt format"):
        export(tmp_path, "skyrl", n=1, tool_format="native")


def test_a_conversations_later_instructions_are_user_observations():
    row = conversation_row("skyrl")
    _, conversation, outputs = play(row, scripted(row["extra_info"]))
    instructions = [i["content"] for i in json.loads(row["extra_info"]["topoeval_task"])["instructions"]]
    assert outputs[-1]["reward"] == 1.0
    assert [m["content"] for m in conversation[2:] if m["role"] == "user" and "<tool_response" not in m["content"]] \
        == instructions
