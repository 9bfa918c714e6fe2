"""Each shipped tool-call format: what it renders, what it parses back, and malformed replies read as
recorded invalid calls (never an exception)."""

import json

import pytest

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.formats import get_format, known_formats, register_format, split_format
from topoeval.formats.base import ToolFormat
from topoeval.models.prompt_tools import to_prompt_messages

PROMPT_FORMATS = ["hermes", "search-r1", "react", "json"]


def tool(name, arg, required=True):
    return {"type": "function", "function": {"name": name, "description": f"{name} things", "parameters": {
        "type": "object", "properties": {arg: {"type": "string"}}, "required": [arg] if required else []}}}


TOOLS = [tool("search", "query"), tool("open_page", "title")]


def conversation(calls):
    """system, user, one assistant turn with ``calls`` (a parallel turn), their results, a final answer."""
    turn = [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, (n, a) in enumerate(calls)]
    results = [{"role": "tool", "tool_call_id": f"c{i}", "name": n, "content": f"result {i}"} for i, (n, _) in enumerate(calls)]
    return [{"role": "system", "content": "You answer questions."}, {"role": "user", "content": "Who?"},
            {"role": "assistant", "content": None, "tool_calls": turn}, *results,
            {"role": "assistant", "content": "Ada Lovelace"}]


@pytest.mark.parametrize("name", PROMPT_FORMATS)
@pytest.mark.parametrize("calls", [[("search", {"query": "first programmer"})],
                                   [("search", {"query": "a"}), ("open_page", {"title": "Ada"})]])
def test_a_rendered_turn_parses_back_to_its_calls(name, calls):
    fmt = get_format(name)
    rendered = fmt.render(conversation(calls), TOOLS)
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user", "assistant"]
    assert rendered[0]["content"].startswith("You answer questions.")  # the suite's prompt, then the tools
    turn = rendered[2]["content"]
    text, parsed = fmt.parse(turn, TOOLS)
    assert [(n, json.loads(a)) for n, a in parsed] == calls
    # one turn's results come back in one user turn, in call order
    results = rendered[3]["content"]
    assert all(f"result {i}" in results for i in range(len(calls)))
    assert len(calls) == 1 or results.index("result 0") < results.index(f"result {len(calls) - 1}")
    assert "tool" not in {m["role"] for m in rendered}


def test_hermes_is_the_prompt_mode_byte_for_byte():
    convo = conversation([("search", {"query": "x"}), ("open_page", {"title": "y"})])
    assert get_format("hermes").render(convo, TOOLS) == to_prompt_messages(convo, TOOLS)


@pytest.mark.parametrize("name, reply, calls, text", [
    ("hermes", 'Looking.\n<tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call>',
     [("search", {"query": "q"})], "Looking."),
    ("json", '{"name": "search", "arguments": {"query": "q"}}', [("search", {"query": "q"})], ""),
    ("json", 'I will search.\n```json\n[{"name": "search", "arguments": {"query": "q"}}, '
             '{"name": "open_page", "arguments": {"title": "t"}}]\n```',
     [("search", {"query": "q"}), ("open_page", {"title": "t"})], "I will search."),
    ("json", '{"tool_calls": [{"function": {"name": "search", "arguments": "{\\"query\\": \\"q\\"}"}}]}',
     [("search", {"query": "q"})], ""),
    ("react", "Thought: look it up\nAction: search\nAction Input: {\"query\": \"q\"}\nObservation: Paris is big",
     [("search", {"query": "q"})], "Thought: look it up"),
    ("search-r1", "<think>I need facts.</think>\n<search> capital of France </search>\n<information>fake",
     [("search", {"query": "capital of France"})], ""),
    ("search-r1", '<search>q</search><tool_call>{"name": "open_page", "arguments": {"title": "t"}}</tool_call>',
     [("search", {"query": "q"}), ("open_page", {"title": "t"})], ""),
])
def test_replies_in_each_format(name, reply, calls, text):
    got_text, got = get_format(name).parse(reply, TOOLS)
    assert [(n, json.loads(a)) for n, a in got] == calls
    assert got_text == text


@pytest.mark.parametrize("name, reply, answer", [
    ("hermes", "Ada Lovelace", "Ada Lovelace"),
    ("json", "The answer is Ada Lovelace.", "The answer is Ada Lovelace."),
    ("json", '{"answer": "Ada Lovelace"}', "Ada Lovelace"),
    ("react", "Thought: I know it\nFinal Answer: Ada Lovelace", "Ada Lovelace"),
    ("search-r1", "<think>known</think> <answer> Ada Lovelace </answer>", "Ada Lovelace"),
    ("search-r1", "<think>known</think> Ada Lovelace", "Ada Lovelace"),
    ("search-r1", "<answer> Ada Lovelace", "Ada Lovelace"),  # unclosed: runs to the end
])
def test_final_answers(name, reply, answer):
    msg = get_format(name).read_reply(AssistantMessage(content=reply), TOOLS)
    assert msg.tool_calls == [] and msg.content == answer


@pytest.mark.parametrize("name, reply, called", [
    ("hermes", '<tool_call>{"name": "search", "arguments": {"query": ', "search"),  # unclosed, cut JSON
    ("json", '{"name": "search", "arguments": {"query": "q"', "search"),
    ("json", '[{"name": "search"}, "nonsense"]', ""),
    ("json", '{"foo": 1}', ""),  # JSON that holds no call
    ("react", "Action: search\nAction Input: {query: q}", "search"),  # not JSON
    ("react", "Action: fly_to_moon\nAction Input: {}", "fly_to_moon"),  # an unknown tool
    ("search-r1", '<tool_call>{"name": "open_page", "arguments": {"title": }</tool_call>', "open_page"),
])
def test_malformed_replies_become_calls_the_runner_rejects(name, reply, called):
    msg = get_format(name).read_reply(AssistantMessage(content=reply), TOOLS)
    assert len(msg.tool_calls) == 1 and msg.tool_calls[0].name == called
    call = msg.tool_calls[0]
    if call.name in {"search", "open_page"}:  # a known tool: its arguments are not JSON (the runner rejects them)
        with pytest.raises(ValueError):
            json.loads(call.arguments)


def test_prose_with_a_brace_is_a_message_in_json():
    text, calls = get_format("json").parse("Sets look like {a, b} in maths.", TOOLS)
    assert calls == [] and text == "Sets look like {a, b} in maths."


def test_search_r1_maps_search_to_the_search_tool_and_the_rest_to_tool_call_blocks():
    fmt = get_format("search-r1")
    # travel: no search tool (search_flights takes three arguments; ask_user's one string is no search)
    travel = [{"type": "function", "function": {"name": "search_flights", "parameters": {"type": "object", "properties": {
        a: {"type": "string"} for a in ("origin", "destination", "date")}, "required": ["origin", "destination", "date"]}}},
        tool("ask_user", "question")]
    prompt = fmt.render_tools(travel)
    assert "<search> query </search>" not in prompt and '"name": "ask_user"' in prompt and "<tool_call>" in prompt
    reply = '<think>ask</think><tool_call>{"name": "ask_user", "arguments": {"question": "budget?"}}</tool_call>'
    assert fmt.parse(reply, travel)[1] == [("ask_user", '{"question": "budget?"}')]
    # a <search> where there is no search tool is a call of an unknown tool (rejected by the runner)
    assert fmt.parse("<search> flights to Rome </search>", travel)[1] == [("search", '{"query": "flights to Rome"}')]
    # wiki: <search> is search; open_page is listed for <tool_call>
    prompt = fmt.render_tools(TOOLS)
    assert "<search> query </search>" in prompt and '"name": "open_page"' in prompt and '"name": "search"' not in prompt
    # the renamed search of a rename_tools step is still the search tool
    renamed = [tool("read_article", "title"), tool("find_articles", "q")]
    assert fmt.parse("<search> q1 </search>", renamed)[1] == [("find_articles", '{"q": "q1"}')]


def test_registry_names_and_model_spec_suffix():
    assert set(PROMPT_FORMATS) | {"native"} <= set(known_formats())
    assert split_format("smollm2-135m@json") == ("smollm2-135m", "json")
    assert split_format("vertex_ai/claude-3@20240620") == ("vertex_ai/claude-3@20240620", None)
    assert split_format("direct:qwen") == ("direct:qwen", None)
    with pytest.raises(UserError, match="unknown tool format 'xml'; known: hermes"):
        get_format("xml")


def test_register_format_refuses_a_shipped_name():
    class Fake(ToolFormat):
        name = "hermes"

    with pytest.raises(UserError, match="shipped"):
        register_format(Fake)
