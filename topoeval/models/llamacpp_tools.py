"""Grammar-constrained tool calling for llama.cpp models, with every generation step bounded.

llama-cpp-python's ``chatml-function-calling`` handler constrains calls with grammars but
generates the message text and each call's arguments with no token limit, so a small model can
run until its context is full (minutes per turn on a CPU). This handler keeps its prompt layout
(ChatML; tools listed in the system turn; the model answers ``message:`` + text or
``functions.<name>:`` + JSON arguments, one or more calls per turn) and its grammars (the choice
between a message and a known tool; the JSON schema of the chosen tool's arguments), but spends
one budget of ``max_tokens`` across all steps of the turn. A call cut off by the budget keeps its
partial JSON, which the runner records as an invalid call.

It is registered as the llama.cpp chat format ``topoeval-tools`` (in-process, and inside the
llama.cpp server topoeval starts).
"""

from __future__ import annotations

import json
import time
from typing import Any

CHAT_FORMAT_NAME = "topoeval-tools"
END = "<|im_end|>"
MAX_CALLS_PER_TURN = 8


def render_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The ChatML prompt: tools described in the system turn, calls and results as text."""
    out: list[str] = []
    tool_text = _tool_text(tools) if tools else ""
    if tools and (not messages or messages[0]["role"] != "system"):
        out.append(f"<|im_start|>system\n{tool_text}{END}\n")
    for m in messages:
        role, content = m["role"], m.get("content") or ""
        if role == "system":
            body = content + ("\n\n" + tool_text if tools else "")
        elif role == "assistant":
            calls = [f"functions.{c['function']['name']}:\n{c['function']['arguments']}" for c in m.get("tool_calls") or []]
            body = "\n".join(([f"message:\n{content}"] if content else []) + calls) if tools else content
        elif role == "tool":
            role, body = "user", f"Result of {m.get('name') or 'the tool'}: {content}"
        else:
            body = content
        out.append(f"<|im_start|>{role}\n{body}{END}\n")
    return "".join(out) + "<|im_start|>assistant\n"


def _tool_text(tools: list[dict[str, Any]]) -> str:
    lines = ["You can use these functions:"]
    for t in tools:
        fn = t["function"]
        lines.append(f"functions.{fn['name']}: {fn.get('description', '')}\n{json.dumps(fn.get('parameters', {}))}")
    lines.append(
        "Reply either with a message, starting with 'message:' and then the text, or with one or more "
        "function calls, each written as 'functions.<name>:' followed by a line of JSON arguments."
    )
    return "\n".join(lines)


def _choice_grammar(names: list[str], allow_end: bool) -> str:
    options = " | ".join(f'"functions.{n}:"' for n in names)
    last = f'"{END}"' if allow_end else '"message:"'
    return f"root ::= functions | {last}\nfunctions ::= {options}\n"


def complete_with_tools(
    llama,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    max_tokens: int | None = 256,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    **_: Any,
) -> dict[str, Any]:
    """One assistant turn as an OpenAI chat.completion dict (message text or tool calls)."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    limit = max_tokens or 256
    common = dict(temperature=temperature, top_p=top_p, seed=seed)
    prompt = render_prompt(messages, tools or [])
    usage = {"prompt_tokens": 0, "completion_tokens": 0}

    def gen(text: str, n: int, grammar=None, stop=(END,)) -> dict[str, Any]:
        n = max(1, min(n, limit - usage["completion_tokens"]))
        r = llama.create_completion(prompt=text, max_tokens=n, grammar=grammar, stop=list(stop), **common)
        usage["prompt_tokens"] = usage["prompt_tokens"] or r["usage"]["prompt_tokens"]
        usage["completion_tokens"] += r["usage"]["completion_tokens"]
        return r["choices"][0]

    if not tools:
        message = {"role": "assistant", "content": gen(prompt, limit)["text"].strip()}
        return _response(message, usage, "stop")

    names = [t["function"]["name"] for t in tools]
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
    choice = gen(prompt, 24, LlamaGrammar.from_string(_choice_grammar(names, allow_end=False), verbose=False), stop=())["text"]
    if not choice.startswith("functions."):
        text = gen(prompt + "message:\n", limit)["text"].strip()
        return _response({"role": "assistant", "content": text}, usage, "stop")

    calls = []
    while choice.startswith("functions.") and len(calls) < MAX_CALLS_PER_TURN and usage["completion_tokens"] < limit:
        name = choice[len("functions."):].rstrip(":")
        prompt += f"functions.{name}:\n"
        try:
            grammar = LlamaGrammar.from_json_schema(json.dumps(schemas[name]), verbose=False)
        except Exception:
            grammar = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
        args = gen(prompt, limit, grammar)["text"]
        calls.append({"id": f"call_{len(calls)}", "type": "function", "function": {"name": name, "arguments": args}})
        prompt += args + "\n"
        if usage["completion_tokens"] >= limit:
            break
        choice = gen(prompt, 24, LlamaGrammar.from_string(_choice_grammar(names, allow_end=True), verbose=False), stop=())["text"]
    return _response({"role": "assistant", "content": None, "tool_calls": calls}, usage, "tool_calls")


def _response(message: dict[str, Any], usage: dict[str, int], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()), "model": "local",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
    }


def register() -> None:
    """Make ``chat_format="topoeval-tools"`` available to llama_cpp.Llama (and its server)."""
    from llama_cpp import llama_chat_format

    registry = llama_chat_format.LlamaChatCompletionHandlerRegistry()
    registry.register_chat_completion_handler(CHAT_FORMAT_NAME, complete_with_tools, overwrite=True)
