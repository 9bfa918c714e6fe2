"""``search-r1``: the tags Search-R1 checkpoints were trained on — ``<search> query </search>``, results in
``<information>…</information>``, reasoning in ``<think>…</think>``, the answer in ``<answer>…</answer>``.

The mapping onto a topology (docs/models.md, "Search-R1 checkpoints"): ``<search>`` is the topology's
search tool — the first tool whose name contains ``search``, ``lookup``, ``find``, ``query`` or
``retrieve`` and whose only required argument is a string — called with the query as that argument.
Every other tool (which a Search-R1 checkpoint never saw) is listed as JSON and called with a Hermes
``<tool_call>{json}</tool_call>`` block; a topology without a search tool (travel) has only those, and
a ``<search>`` there is a call of an unknown tool ``search`` (an invalid call, the model's failure). A
reply is read up to its first ``<information>`` (the model does not get to write its own results);
an unclosed ``<search>`` or ``<answer>`` runs to the end of the reply.
"""

from __future__ import annotations

import json
import re

from topoeval.formats.base import ToolFormat, Tools, strip_think, tool_lines
from topoeval.formats.hermes import call_text, parse_prompt_reply

_SEARCH = re.compile(r"<search>(.*?)(?:</search>|$)", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.DOTALL)
#: Search-R1's own instruction (its training template), with the tags it was trained on
INSTRUCTIONS = (
    "You must conduct reasoning inside <think> and </think> first every time you get new information. "
    "After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query </search> "
    "and it will return the top searched results between <information> and </information>. You can search as many "
    "times as your want. If you find no further external knowledge needed, you can directly provide the answer "
    "inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>."
)


INSTRUCTIONS_NO_SEARCH = (
    "You must conduct reasoning inside <think> and </think> first every time you get new information. "
    "After reasoning, you can use the tools below; their results come back between <information> and "
    "</information>. When you are done, provide the answer inside <answer> and </answer>, without detailed "
    "illustrations."
)
#: words a search tool's name contains (the wiki's ``search`` and its renamings ``find_articles``,
#: ``query_index``, ``lookup``)
SEARCH_WORDS = ("search", "lookup", "find", "query", "retrieve")


def search_tool(tools: Tools) -> tuple[str, str] | None:
    """(tool name, its query argument) that ``<search>`` stands for, or None (see the module docstring)."""
    for t in tools:
        fn = t["function"]
        params = fn.get("parameters") or {}
        required = params.get("required") or []
        if any(w in fn["name"].lower() for w in SEARCH_WORDS) and len(required) == 1 \
                and (params.get("properties") or {}).get(required[0], {}).get("type") == "string":
            return fn["name"], required[0]
    return None


class SearchR1Format(ToolFormat):
    name = "search-r1"
    description = "<search>/<information>/<answer> tags (Search-R1); other tools as <tool_call> blocks"

    def render_tools(self, tools: Tools) -> str:
        search = search_tool(tools)
        others = [t for t in tools if search is None or t["function"]["name"] != search[0]]
        text = INSTRUCTIONS if search else INSTRUCTIONS_NO_SEARCH
        if others:
            text += ("\n" + ("Other tools" if search else "Tools")
                     + " (call one with <tool_call>{\"name\": \"<tool name>\", "
                     "\"arguments\": {...}}</tool_call>; results come back between <information> and </information>):\n"
                     + "\n".join(tool_lines(others)))
        return text

    def render_calls(self, calls: list[tuple[str, str]], tools: Tools) -> str:
        name, arg = search_tool(tools) or ("", "")
        out = []
        for call, args in calls:
            try:
                query = json.loads(args).get(arg) if call == name else None
            except (json.JSONDecodeError, AttributeError):
                query = None
            out.append(f"<search> {query} </search>" if isinstance(query, str) else call_text(call, args))
        return "\n".join(out)

    def render_answer(self, content: str) -> str:
        return f"<answer> {content} </answer>"

    def render_result(self, name: str, content: str, tools: Tools) -> str:
        return f"<information>{content}</information>"

    def parse(self, text: str, tools: Tools) -> tuple[str, list[tuple[str, str]]]:
        text = text.split("<information>", 1)[0]
        name, arg = search_tool(tools) or ("search", "query")  # no search tool: an unknown tool, rejected
        calls = [(name, json.dumps({arg: q.strip()}, ensure_ascii=False)) for q in _SEARCH.findall(text)]
        rest, others = parse_prompt_reply(_SEARCH.sub("", text))
        calls += [(c.name, c.arguments) for c in others]
        if calls:
            return strip_think(rest), calls
        answer = _ANSWER.findall(text)
        return (answer[-1].strip() if answer else strip_think(text)), []
