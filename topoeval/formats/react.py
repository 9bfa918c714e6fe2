"""``react``: Thought / Action / Action Input / Observation text (ReAct), ``Final Answer:`` to finish.

Each call is an ``Action: <tool>`` line followed by ``Action Input: <JSON arguments>``; several pairs
in one reply are one parallel turn. Results come back as ``Observation:`` lines in a user turn. A
reply is read up to its first ``Observation:`` (a model that goes on to imagine the result does not
get to write it). Arguments that are not JSON are kept as written: the runner records an invalid call.
"""

from __future__ import annotations

import json
import re

from topoeval.formats.base import ToolFormat, Tools

_ACTION = re.compile(r"^\s*Action\s*:\s*(.*?)\s*$\n?(?:^\s*Action\s+Input\s*:\s*(.*?))?"
                     r"(?=^\s*(?:Action|Thought|Final\s+Answer)\s*:|\Z)",
                     re.MULTILINE | re.DOTALL | re.IGNORECASE)
_OBSERVATION = re.compile(r"^\s*Observation\s*:", re.MULTILINE | re.IGNORECASE)
_FINAL = re.compile(r"^\s*Final\s+Answer\s*:\s*", re.MULTILINE | re.IGNORECASE)
INSTRUCTIONS = """Use this format:
Thought: what to do next
Action: the tool to call, one of [{names}]
Action Input: the arguments as a JSON object
(several Action / Action Input pairs make calls that run together)
Observation: the result (given to you; do not write it)
... (Thought / Action / Action Input / Observation can repeat)
When you are done:
Thought: I know the answer
Final Answer: the answer"""


class ReactFormat(ToolFormat):
    name = "react"
    description = "Thought / Action / Action Input / Observation text (ReAct), Final Answer: to finish"

    def render_tools(self, tools: Tools) -> str:
        lines = ["You can use these tools:"]
        for t in tools:
            fn = t["function"]
            lines.append(f"{fn['name']}: {fn.get('description') or ''} "
                         f"Arguments: {json.dumps(fn.get('parameters') or {})}")
        return "\n".join(lines) + "\n\n" + INSTRUCTIONS.format(names=", ".join(t["function"]["name"] for t in tools))

    def render_calls(self, calls: list[tuple[str, str]], tools: Tools) -> str:
        return "\n".join(f"Action: {name}\nAction Input: {args}" for name, args in calls)

    def render_answer(self, content: str) -> str:
        return f"Final Answer: {content}"

    def render_result(self, name: str, content: str, tools: Tools) -> str:
        return f"Observation: {content}"

    def parse(self, text: str, tools: Tools) -> tuple[str, list[tuple[str, str]]]:
        text = _OBSERVATION.split(text, 1)[0]
        calls = [(name.strip(), (args or "").strip() or "{}") for name, args in _ACTION.findall(text)]
        first = _ACTION.search(text)
        if calls and first is not None:
            return text[:first.start()].strip(), calls
        final = _FINAL.split(text)
        return (final[-1] if len(final) > 1 else text).strip(), []
