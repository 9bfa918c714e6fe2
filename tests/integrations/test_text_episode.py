"""topoeval.integrations.text_episode: the text core under the verl loop and the SkyRL env — the
reference policies' replies written in each tool-call format reach topoeval's own scores, a malformed
call is a recorded invalid call, and the reward is topoeval.reward on the same trajectory."""

from __future__ import annotations

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.integrations.text_episode import EpisodeRow, TextEpisode, opening
from topoeval.integrations.topology_tasks import load_topology_tasks

from .verl_fixtures import conversation_row

PROTOCOL = "wiki_to_travel"


def episode(topology: str, index: int = 0, tool_format: str = "hermes", **kwargs) -> TextEpisode:
    tasks = load_topology_tasks(PROTOCOL, topology, "test")
    return TextEpisode(tasks.task(index), tasks.topology, tool_format=tool_format, limits=tasks.limits, **kwargs)


def play(ep: TextEpisode, policy: str = "oracle") -> list[list[dict]]:
    """Plays ``policy`` as text; returns what the model read after each turn."""
    seen = []
    while not ep.done:
        reply = ep.topology.suite.oracle(ep.task, list(ep.state.messages), policy) if policy != "noop" else None
        seen.append(ep.step_text(ep.reply_text(reply) if reply is not None else ""))
    return seen


@pytest.mark.parametrize(("topology", "tool_format"), [("wiki", "hermes"), ("wiki", "search-r1"), ("wiki", "react"),
                                                       ("wiki", "json"), ("travel", "hermes"), ("travel", "json"),
                                                       ("travel", "react")])
def test_the_oracle_written_in_a_format_reaches_reward_one(topology, tool_format):
    ep = episode(topology, tool_format=tool_format)
    play(ep)
    assert ep.reward() == 1.0
    assert topoeval.reward(ep.task, ep.trajectory(), topology=ep.topology) == 1.0
    assert ep.metrics()["topoeval/invalid_calls"] == 0.0


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_noop_reward_zero(topology):
    ep = episode(topology)
    play(ep, "noop")
    assert ep.done and ep.reward() == 0.0 and ep.turns == 1


def test_prompt_is_the_format_rendering_and_native_leaves_tools_to_the_template():
    hermes, native = episode("travel"), episode("travel", tool_format="native")
    assert hermes.template_tools() is None and "# Tools" in hermes.prompt_messages()[0]["content"]
    assert native.template_tools() == native.state.tools and "# Tools" not in native.prompt_messages()[0]["content"]
    assert hermes.prompt_messages() == opening(hermes.topology, hermes.task, hermes.format)
    # native reads <tool_call> blocks (the Hermes/Qwen convention) and answers with tool messages
    new = native.step_text('<tool_call>{"name": "ask_user", "arguments": {"question": "What is your budget?"}}'
                           '</tool_call>')
    assert [m["role"] for m in new] == ["tool"] and new[0]["name"] == "ask_user"


def test_a_malformed_call_is_an_invalid_call_with_an_observation_never_an_exception():
    ep = episode("wiki")
    for text in ['<tool_call>{"name": "search", "arguments": {oops</tool_call>', '<tool_call>[1, 2]</tool_call>',
                 '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>']:
        new = ep.step_text(text)
        assert len(new) == 1 and new[0]["role"] == "user" and "error" in new[0]["content"]
    ep.step_text("I give up")
    assert ep.done and ep.scores()["invalid_calls"] == 3 and ep.reward() == 0.0


def test_the_travellers_answers_come_back_as_user_turns():
    ep = episode("travel")
    seen = play(ep)
    answers = [m for turn in seen for m in turn if 'name="ask_user"' in m["content"]]
    assert answers and all(m["role"] == "user" for m in answers)


def test_metric_mix_summary_and_truncation():
    ep = episode("travel", metric={"success": 0.7, "dq": 0.3})
    ep.step_text('<tool_call>{"name": "search_flights", "arguments": {"origin": "x", "destination": "y", '
                 '"date": "2027-01-01"}}</tool_call>')
    ep.truncate()
    scores = ep.scores()
    assert ep.done and ep.state.status == "limit:response_length" and ep.metrics()["topoeval/truncated"] == 1.0
    assert ep.reward() == pytest.approx(0.7 * scores["success"] + 0.3 * (scores["dq"] or 0.0))
    assert set(ep.summary()) == {"topoeval_reward", "topoeval_success", "topoeval_dq", "topoeval_tool_calls",
                                 "topoeval_invalid_calls", "topoeval_turns", "topoeval_truncated"}


def test_bad_rows_and_metrics_are_one_line_errors():
    with pytest.raises(UserError, match="unknown reward metric"):
        episode("wiki", metric="nonsense")
    with pytest.raises(UserError, match="topoeval export"):
        EpisodeRow.parse({"index": 3})
    with pytest.raises(UserError, match="unknown tool format"):
        episode("wiki", tool_format="klingon")


def test_a_conversation_of_instructions_comes_as_plain_user_turns():
    row = conversation_row("skyrl")
    ep = TextEpisode.from_row(row["extra_info"])
    seen = play(ep)
    instructions = [i.content for i in ep.task.instructions]
    users = [m["content"] for turn in seen for m in turn
             if m["role"] == "user" and "<tool_response" not in m["content"]]
    assert len(instructions) == 2 and users == instructions
    assert ep.reward() == 1.0 and ep.state.limits.max_turns_per_instruction == 20
