"""The one reader of OpenAI-format assistant messages (backends, adapters, rewards all go through it)."""

import json
from types import SimpleNamespace

from topoeval.core.messages import AssistantMessage


def test_nested_flat_object_and_missing_arguments_read_alike():
    msg = {"content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "lookup", "arguments": '{"key": "x"}'}},
        {"function": {"name": "lookup", "arguments": {"key": "y"}}},   # arguments as an object, no id
        {"id": "c", "name": "flat", "arguments": None},                # flat call, no arguments
        {"id": "d", "function": {"name": "bad", "arguments": '{"key": '}},  # malformed: kept as sent
    ]}
    reply = AssistantMessage.from_openai(msg, {"prompt_tokens": 3, "completion_tokens": 2})
    assert [(c.id, c.name) for c in reply.tool_calls] == [("a", "lookup"), ("call_1", "lookup"), ("c", "flat"), ("d", "bad")]
    assert json.loads(reply.tool_calls[1].arguments) == {"key": "y"}
    assert reply.tool_calls[2].arguments == "{}" and reply.tool_calls[3].arguments == '{"key": '
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (3, 2)


def test_attribute_objects_content_parts_and_id_template():
    call = SimpleNamespace(id=None, name="lookup", arguments='{"key": "x"}')
    reply = AssistantMessage.from_openai(SimpleNamespace(content="hi", tool_calls=[call]), id_template="")
    assert reply.content == "hi" and reply.tool_calls[0].id == "" and reply.tool_calls[0].name == "lookup"
    parts = AssistantMessage.from_openai({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    assert parts.content == "ab" and parts.tool_calls == []


def test_it_round_trips_the_runners_own_format():
    reply = AssistantMessage.from_openai({"content": "x", "tool_calls": [{"id": "1", "function": {"name": "n", "arguments": "{}"}}]})
    assert AssistantMessage.from_openai(reply.openai()) == reply
