"""Prompt-mode tool calling: rendering and parsing."""

import json

from topoeval.core.messages import AssistantMessage
from topoeval.models.llamacpp_format import for_chatml_function_calling
from topoeval.models.prompt_tools import parse_prompt_reply, prompt_reply, to_prompt_messages

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "d", "parameters": {"type": "object"}}}]


def test_parse_several_calls_and_text():
    text = 'Let me look.\n<tool_call>{"name": "lookup", "arguments": {"key": "a"}}</tool_call>\n' \
           '<tool_call>{"name": "lookup", "arguments": {"key": "b"}}</tool_call>'
    content, calls = parse_prompt_reply(text)
    assert content == "Let me look."
    assert [json.loads(c.arguments) for c in calls] == [{"key": "a"}, {"key": "b"}]
    assert {c.id for c in calls} == {"call_0", "call_1"}


def test_malformed_blocks_become_calls_the_runner_rejects():
    _, calls = parse_prompt_reply('<tool_call>{"name": "lookup", "arguments": {"key": </tool_call>')
    assert calls[0].name == "lookup" and calls[0].arguments.startswith('{"name"')
    _, calls = parse_prompt_reply("<tool_call>[1, 2]</tool_call>")
    assert calls[0].name == ""
    _, calls = parse_prompt_reply('<tool_call>{"name": "lookup", "arguments": {"key": "a"}}')  # unclosed at the end
    assert json.loads(calls[0].arguments) == {"key": "a"}


def test_plain_answer_stays_an_answer():
    reply = prompt_reply(AssistantMessage(content="Paris"))
    assert reply.content == "Paris" and reply.tool_calls == []


def test_render_round_trip():
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "lookup", "arguments": '{"key": "a"}'}},
            {"id": "2", "type": "function", "function": {"name": "lookup", "arguments": '{"key": "b"}'}}]},
        {"role": "tool", "tool_call_id": "1", "name": "lookup", "content": "A"},
        {"role": "tool", "tool_call_id": "2", "name": "lookup", "content": "B"},
    ]
    out = to_prompt_messages(msgs, TOOLS)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert "# Tools" in out[0]["content"] and '"name": "lookup"' in out[0]["content"]
    _, calls = parse_prompt_reply(out[2]["content"])
    assert len(calls) == 2
    assert out[3]["content"].count("<tool_response") == 2


def test_chatml_function_calling_quirks():
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
                                                                   "function": {"name": "lookup", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "1", "name": "lookup", "content": "A"}]
    out = for_chatml_function_calling(msgs)
    assert out[0]["role"] == "system"                 # tools only show inside a system message
    assert out[2]["content"] == "" and out[2]["tool_calls"]  # assistant content must be set
    assert out[3] == {"role": "user", "content": "Result of lookup: A"}  # tool messages would be dropped
