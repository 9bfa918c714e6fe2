"""The training chat template renders exactly what the in-process llama.cpp backend sends, and the
backend's generation writes exactly the assistant text the template labels."""

import asyncio
import json

import pytest

from topoeval.core.policy import SamplingParams
from topoeval.models.llamacpp_format import for_chatml_function_calling
from topoeval.models.llamacpp_template import chat_template, inference_text
from topoeval.models.llamacpp_tools import END, assistant_text, complete_with_tools, render_prompt
from topoeval.policies.reference import OraclePolicy
from topoeval.runner.episode import run_episode
from topoeval.training.export import select_tasks

transformers = pytest.importorskip("transformers", reason="transformers is an optional extra (topoeval[hf])")

GEN = "<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, unk_token="<unk>")),
                                  unk_token="<unk>")
    tok.chat_template = chat_template()
    return tok


def oracle_conversations(protocol, topology, n):
    sel = select_tasks(protocol, split="train", n=n, topology=topology)
    tools = [t.openai() for t in sel.topology.suite.tools]
    out = []
    for task in sel.tasks:
        rec = asyncio.run(run_episode(policy=OraclePolicy(), suite=sel.topology.suite, task=task,
                                      system_prompt=sel.topology.system_prompt(), demos=[], limits=sel.protocol.limits,
                                      sampling=SamplingParams(), sample=0, shots=0, labels={}))
        out.append(([{"role": "system", "content": sel.topology.system_prompt()}, *rec["messages"]], tools))
    return out


CASES = [("wiki_to_travel", None, 6), ("wiki_to_travel", "travel", 6), ("wiki_to_travel_ladder", "travel-no-user", 3)]


@pytest.mark.parametrize("protocol,topology,n", CASES)
def test_every_turn_prompt_is_the_inference_prompt(tokenizer, protocol, topology, n):
    for messages, tools in oracle_conversations(protocol, topology, n):
        whole = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
        assert whole + GEN == inference_text(messages, tools)
        for k, m in enumerate(messages):
            if m["role"] == "assistant":  # the prompt the model answered at this turn
                prompt = tokenizer.apply_chat_template(messages[:k], tools=tools, tokenize=False, add_generation_prompt=True)
                assert prompt == inference_text(messages[:k], tools)
                assert whole.startswith(prompt + assistant_text(m, True) + END)


def test_edge_shapes_render_alike(tokenizer):
    tools = [{"type": "function", "function": {"name": "look", "description": None,
                                                "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": "é"}}}}},
             {"type": "function", "function": {"name": "bare"}}]
    messages = [
        {"role": "user", "content": "q"},  # no system message: the backend puts its default first
        {"role": "assistant", "content": "thinking", "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "look", "arguments": '{"q": "a"}'}},
            {"id": "2", "type": "function", "function": {"name": "bare", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "name": "look", "content": "A"},
        {"role": "tool", "tool_call_id": "2", "name": None, "content": None},
        {"role": "user", "content": "and?"},
        {"role": "assistant", "content": ""},
        {"role": "system", "content": "late system"},
        {"role": "assistant", "content": None},
    ]
    for tl in (tools, []):
        assert tokenizer.apply_chat_template(messages, tools=tl or None, tokenize=False,
                                             add_generation_prompt=True) == inference_text(messages, tl)


class ScriptedGen:
    """A generation step (``complete_with_tools``'s ``gen``) answering from a script; records every prompt."""

    def __init__(self, texts):
        self.texts, self.prompts = list(texts), []

    async def __call__(self, prompt, n, grammar=None, json_schema=None, stop=()):
        self.prompts.append(prompt)
        return self.texts.pop(0), 10, 2


def complete(gen, messages, tools, max_tokens=256):
    return asyncio.run(complete_with_tools(gen, messages, tools, max_tokens))


TOOLS = [{"type": "function", "function": {"name": "look", "description": "d",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]


def test_generation_grows_the_turn_the_template_labels(tokenizer):
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    # two calls (the second after the model chose "\n" + its name), then the end of the turn
    llama = ScriptedGen(["functions.look:", '{"q": "a"}\n', "\nfunctions.look:", ' {"q": "b"}', END])
    reply = complete(llama, for_chatml_function_calling(history), TOOLS, max_tokens=100)
    message = reply["choices"][0]["message"]
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == ['{"q": "a"}', '{"q": "b"}']
    rendered = tokenizer.apply_chat_template([*history, message], tools=TOOLS, tokenize=False)
    # the context when the model chose to end its turn is the rendered turn, up to its <|im_end|>
    assert rendered.startswith(llama.prompts[-1] + END)
    assert llama.prompts[-1] == render_prompt(for_chatml_function_calling(history), TOOLS) + assistant_text(message, True)
    # a message turn: "message:" chosen, then its text
    llama = ScriptedGen(["message:", " Paris "])
    message = complete(llama, for_chatml_function_calling(history), TOOLS)["choices"][0]["message"]
    assert message["content"] == "Paris"
    rendered = tokenizer.apply_chat_template([*history, message], tools=TOOLS, tokenize=False)
    assert rendered.startswith(llama.prompts[-1] + "Paris" + END)


@pytest.mark.local_model
def test_choice_grammars_parse():
    """llama-server accepts both choice grammars (an odd tool name included) and keeps to them."""
    from tests.models.llama_procs import require_server
    from topoeval.models.llama_server import LlamaServer
    from topoeval.models.llamacpp_build import server_binary
    from topoeval.models.llamacpp_tools import _first_choice_grammar, _next_choice_grammar

    gguf = require_server()
    server = LlamaServer(server_binary(), gguf, slots=1, n_ctx=512)
    try:
        for g, allowed in ((_first_choice_grammar(["look", 'odd"name']), ("functions.look:", 'functions.odd"name:', "message:")),
                           (_next_choice_grammar(["look", "b"]), ("", "\nfunctions.look:", "\nfunctions.b:"))):
            out = server.post_sync("/completion", {"prompt": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
                                                   "n_predict": 24, "grammar": g, "temperature": 0.0})
            assert out["content"] in allowed, (g, out["content"])
    finally:
        server.stop()
    assert json.dumps("\nfunctions.look:") in _next_choice_grammar(["look"])


def test_text_then_calls_writes_the_turn_the_template_labels(tokenizer):
    """An adapter trained on rationale rows writes a line, then its calls, in one turn; the turn it builds
    is the one the training template renders, and a text the model ends is a plain message."""
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    shaped = for_chatml_function_calling(history)
    llama = ScriptedGen(["message:", "Wanted: a. Best: b. ", "\nfunctions.look:", '{"q": "b"}', END])
    message = asyncio.run(complete_with_tools(llama, shaped, TOOLS, 100, text_then_calls=True))["choices"][0]["message"]
    assert message["content"] == "Wanted: a. Best: b."
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == ['{"q": "b"}']
    rendered = tokenizer.apply_chat_template([*history, message], tools=TOOLS, tokenize=False)
    assert rendered.startswith(llama.prompts[-1] + END)
    assert llama.prompts[2] == render_prompt(shaped, TOOLS) + "message:\nWanted: a. Best: b."  # the choice after the text
    # the model ends its text: a message, and the step after it was the after-a-call choice
    llama = ScriptedGen(["message:", " Paris ", ""])
    message = asyncio.run(complete_with_tools(llama, shaped, TOOLS, 100, text_then_calls=True))["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Paris"}
    # without the option the text is the whole turn, with no step after it
    llama = ScriptedGen(["message:", " Paris "])
    assert complete(llama, shaped, TOOLS)["choices"][0]["message"]["content"] == "Paris"
    assert len(llama.prompts) == 2


def test_rationale_rows_render_as_the_inference_prompt(tokenizer):
    """SFT rows with the travel rationale: text before the hold call, rendered as inference renders it."""
    from topoeval.training.sft_data import conversation_row

    sel = select_tasks("travel_to_wiki", split="train", n=4)
    tools = [t.openai() for t in sel.topology.suite.tools]
    seen = 0
    for task in sel.tasks:
        rec = asyncio.run(run_episode(policy=OraclePolicy(), suite=sel.topology.suite, task=task,
                                      system_prompt=sel.topology.system_prompt(), demos=[], limits=sel.protocol.limits,
                                      sampling=SamplingParams(), sample=0, shots=0, labels={}))
        row = conversation_row(rec, sel.topology, task, "train", "oracle", tools, rationale=True)
        messages = row["messages"]
        texts = [m for m in messages if m["role"] == "assistant" and m["tool_calls"] and m["content"]]
        assert len(texts) == 1 and texts[0]["tool_calls"][0]["function"]["name"] == "hold_seat"
        assert texts[0]["content"].endswith(f": {task.data['truth']['target']}.")
        whole = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
        assert whole + GEN == inference_text(messages, tools)
        seen += 1
    assert seen == 4
