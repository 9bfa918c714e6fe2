"""Grammar-constrained tool calling for llama.cpp models, with every generation step bounded.

llama-cpp-python's ``chatml-function-calling`` handler constrains calls with grammars but
generates the message text and each call's arguments with no token limit, so a small model can
run until its context is full (minutes per turn on a CPU). This handler keeps its prompt layout
(ChatML; tools listed in the system turn; the model answers ``message:`` + text or
``functions.<name>:`` + JSON arguments, one or more calls per turn, separated by a newline) and its grammars (the choice
between a message and a known tool; the JSON schema of the chosen tool's arguments), but spends
one budget of ``max_tokens`` across all steps of the turn. A call cut off by the budget keeps its
partial JSON, which the runner records as an invalid call.

``text_then_calls`` (an adapter trained on :data:`topoeval.training.sft_data.RATIONALE_FORMAT`
conversations): a message may be followed by calls in the same turn, as :func:`assistant_text`
renders a turn with both. The text stops at the end of the turn or where the model starts a call
(``\nfunctions.``); one more step under the after-a-call grammar then decides between the end of the
turn and a call, exactly as after a call.

Each step is one request to the llama.cpp server topoeval starts
(:mod:`topoeval.models.llama_server_policy`): the prompt so far, a token budget and a grammar; the
server's prompt cache keeps the prefix, so a step costs its new tokens only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

#: The name of this prompt layout (SFT exports and training records carry it) and of the same layout
#: with a line of text allowed before a turn's calls (``text_then_calls``).
PROMPT_FORMAT = "topoeval-tools"
RATIONALE_FORMAT = "topoeval-tools+rationale"
START = "<|im_start|>"
END = "<|im_end|>"
MAX_CALLS_PER_TURN = 8
#: The pieces of the prompt layout; :mod:`topoeval.models.llamacpp_template` builds the training
#: chat template from the same constants, so training and inference render one text.
TOOLS_HEADER = "You can use these functions:"
TOOLS_FOOTER = (
    "Reply either with a message, starting with 'message:' and then the text, or with one or more "
    "function calls, each written as 'functions.<name>:' followed by a line of JSON arguments."
)
MESSAGE_PREFIX = "message:\n"
CALL_PREFIX = "functions."
#: between two calls of one turn (the model chooses it, or the end of its turn, after each call)
CALL_SEPARATOR = "\n"
#: a tool result, sent back in a user turn
RESULT_FORMAT = "Result of {name}: {content}"
UNNAMED_TOOL = "the tool"


def render_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The ChatML prompt: tools described in the system turn, calls and results as text."""
    out: list[str] = []
    tool_text = render_tools(tools) if tools else ""
    if tools and (not messages or messages[0]["role"] != "system"):
        out.append(f"{START}system\n{tool_text}{END}\n")
    for m in messages:
        role, content = m["role"], m.get("content") or ""
        if role == "system":
            body = content + ("\n\n" + tool_text if tools else "")
        elif role == "assistant":
            body = assistant_text(m, bool(tools))
        elif role == "tool":
            role, body = "user", tool_result_text(m)
        else:
            body = content
        out.append(f"{START}{role}\n{body}{END}\n")
    return "".join(out) + f"{START}assistant\n"


def render_tools(tools: list[dict[str, Any]]) -> str:
    """The system prompt's description of the tools."""
    lines = [TOOLS_HEADER]
    for t in tools:
        fn = t["function"]
        lines.append(f"{CALL_PREFIX}{fn['name']}: {fn.get('description') or ''}\n"
                     f"{json.dumps(fn.get('parameters') or {})}")
    lines.append(TOOLS_FOOTER)
    return "\n".join(lines)


def call_text(name: str, arguments: str) -> str:
    """One call as the model writes it: the name line, then the JSON arguments."""
    return f"{CALL_PREFIX}{name}:\n{arguments}"


def assistant_text(message: dict[str, Any], with_tools: bool) -> str:
    """An assistant turn exactly as the model writes it (:func:`complete_with_tools` builds the same text
    while it generates): a message, or the calls separated by :data:`CALL_SEPARATOR`."""
    content = message.get("content") or ""
    if not with_tools:
        return content
    calls = [call_text(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    if not calls:
        return MESSAGE_PREFIX + content
    # a turn with both (from another backend's history) keeps its text first
    return CALL_SEPARATOR.join(([MESSAGE_PREFIX + content] if content else []) + calls)


def tool_result_text(message: dict[str, Any]) -> str:
    return RESULT_FORMAT.format(name=message.get("name") or UNNAMED_TOOL, content=message.get("content") or "")


def _gbnf(text: str) -> str:
    return json.dumps(text)  # a JSON string literal is a GBNF literal (\n, \" escapes)


def _first_choice_grammar(names: list[str]) -> str:
    """The start of a turn: a call or a message."""
    calls = " | ".join(_gbnf(call_text(n, "").rstrip("\n")) for n in names)
    return f"root ::= {calls} | {_gbnf(MESSAGE_PREFIX.rstrip(chr(10)))}\n"


def _next_choice_grammar(names: list[str]) -> str:
    """After a call: another call (after :data:`CALL_SEPARATOR`) or the end of the turn.

    The end is the empty alternative: a grammar that already accepts lets llama.cpp sample the
    end-of-turn token (``<|im_end|>``, a single special token). Spelled out as a literal, END could
    only be written piece by piece as plain text, which a model never does — so every turn ran on,
    call after call, to its token budget."""
    calls = " | ".join(_gbnf(CALL_SEPARATOR + call_text(n, "").rstrip("\n")) for n in names)
    return f"root ::= ({calls})?\n"


#: ``await gen(text, n, grammar=..., json_schema=..., stop=...)`` -> (generated text, prompt tokens,
#: generated tokens): one bounded generation step continuing ``text``. A grammar is a GBNF string; a
#: JSON schema constrains the step to the schema's JSON (the server converts it to a grammar).
Generate = Callable[..., Awaitable[tuple[str, int, int]]]


async def complete_with_tools(
    gen: Generate,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    max_tokens: int | None = 256,
    text_then_calls: bool = False,
) -> dict[str, Any]:
    """One assistant turn as an OpenAI chat.completion dict (message text or tool calls, or with
    ``text_then_calls`` both: see the module docstring).

    The turn's text grows exactly as :func:`assistant_text` renders the finished message, so the
    model's context while it writes a turn is the text it is shown for that turn afterwards (and the
    text a model trained on :mod:`topoeval.training.sft_data` conversations learned).
    """
    limit = max_tokens or 256
    prompt = render_prompt(messages, tools or [])
    usage = {"prompt_tokens": 0, "completion_tokens": 0}

    async def step(text: str, n: int, grammar: str | None = None, json_schema: dict | None = None,
                   stop: tuple[str, ...] = (END,)) -> str:
        n = max(1, min(n, limit - usage["completion_tokens"]))
        out, prompt_tokens, generated = await gen(text, n, grammar=grammar, json_schema=json_schema, stop=stop)
        usage["prompt_tokens"] = usage["prompt_tokens"] or prompt_tokens
        usage["completion_tokens"] += generated
        return out

    if not tools:
        message = {"role": "assistant", "content": (await step(prompt, limit)).strip()}
        return _response(message, usage, "stop")

    names = [t["function"]["name"] for t in tools]
    schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
    choice = await step(prompt, 24, _first_choice_grammar(names), stop=())
    content = None
    turn = ""  # the turn's text so far: what assistant_text renders for the text and calls made
    if not choice.startswith(CALL_PREFIX):
        stop = (END, CALL_SEPARATOR + CALL_PREFIX) if text_then_calls else (END,)
        text = (await step(prompt + MESSAGE_PREFIX, limit, stop=stop)).strip()
        if not text_then_calls or usage["completion_tokens"] >= limit:
            return _response({"role": "assistant", "content": text}, usage, "stop")
        turn = MESSAGE_PREFIX + text
        choice = await step(prompt + turn, 24, _next_choice_grammar(names), stop=())
        choice = choice[len(CALL_SEPARATOR):] if choice.startswith(CALL_SEPARATOR + CALL_PREFIX) else choice
        if not choice.startswith(CALL_PREFIX):
            return _response({"role": "assistant", "content": text}, usage, "stop")
        content = text

    calls: list[dict[str, Any]] = []
    while choice.startswith(CALL_PREFIX) and len(calls) < MAX_CALLS_PER_TURN and usage["completion_tokens"] < limit:
        name = choice[len(CALL_PREFIX):].rstrip(":")
        turn += (CALL_SEPARATOR if turn else "") + call_text(name, "")
        args = (await step(prompt + turn, limit, json_schema=schemas.get(name) or {})).strip()
        calls.append({"id": f"call_{len(calls)}", "type": "function", "function": {"name": name, "arguments": args}})
        turn += args
        if usage["completion_tokens"] >= limit:
            break
        choice = await step(prompt + turn, 24, _next_choice_grammar(names), stop=())
        choice = choice[len(CALL_SEPARATOR):] if choice.startswith(CALL_SEPARATOR + CALL_PREFIX) else choice
    return _response({"role": "assistant", "content": content, "tool_calls": calls}, usage, "tool_calls")


def _response(message: dict[str, Any], usage: dict[str, int], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()), "model": "local",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
    }
