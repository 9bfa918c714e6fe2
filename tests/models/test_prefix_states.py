"""Which part of an episode's first prompt is its cell's shared prefix, and how saved states are named.

The save/restore itself runs on a real llama-server in tests/models/test_llama_server_isolation.py."""

from topoeval.models.llamacpp_tools import render_prompt
from topoeval.models.prefix_states import shared_prefix, state_name

TOOLS = [{"type": "function", "function": {"name": "search", "description": "Search.",
                                           "parameters": {"type": "object", "properties": {}}}}]
DEMO = [{"role": "user", "content": "Who wrote Dune?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "name": "search", "content": "Frank Herbert"},
        {"role": "assistant", "content": "Frank Herbert."}]


def first_prompt(task: str, demos=()) -> str:
    return render_prompt([{"role": "system", "content": "Be brief."}, *demos, {"role": "user", "content": task}], TOOLS)


def test_the_prefix_is_everything_before_the_task_and_the_same_for_every_task_of_a_cell():
    a, b = first_prompt("Who wrote Solaris?", DEMO), first_prompt("Where is Oslo?", DEMO)
    assert shared_prefix(a) == shared_prefix(b)
    assert a.startswith(shared_prefix(a)) and "Solaris" not in shared_prefix(a)
    # the demonstrations (their user turns and tool results included) are part of it
    assert "Frank Herbert" in shared_prefix(a) and "Who wrote Dune?" in shared_prefix(a)
    assert shared_prefix(first_prompt("Who wrote Solaris?")) != shared_prefix(a)


def test_a_prompt_that_starts_with_its_task_shares_nothing():
    assert shared_prefix(render_prompt([{"role": "user", "content": "Hi"}], [])) == ""
    assert shared_prefix("no chat turns at all") == ""


def test_a_state_is_named_by_its_adapter_and_its_prefix():
    prefix = shared_prefix(first_prompt("x"))
    assert state_name(None, prefix) != state_name("/adapters/wiki.gguf", prefix)
    assert state_name(None, prefix) != state_name(None, prefix + " ")
    assert state_name(None, prefix) == state_name(None, prefix)
    assert state_name(None, prefix).endswith(".bin") and "/" not in state_name(None, prefix)
