"""Messages for llama.cpp servers that speak ``chatml-function-calling``-style formats.

That format renders tools only inside a system message, silently drops ``tool`` messages, and
needs ``content`` set on every assistant turn. So: a system message is always present, tool
results go back as a user turn of text, and empty assistant content becomes "". topoeval sends
its messages to any llama.cpp server in this shape (its own ``topoeval-tools`` format accepts it).
"""

from __future__ import annotations

from typing import Any

from topoeval.models.llamacpp_tools import tool_result_text

#: The system turn put first when a conversation has none.
DEFAULT_SYSTEM = "You are a helpful assistant."
#: Between the results of one turn's calls, sent back together in one user turn.
RESULT_SEPARATOR = "\n"


def for_chatml_function_calling(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if not messages or messages[0]["role"] != "system":
        out.append({"role": "system", "content": DEFAULT_SYSTEM})
    for m in messages:
        if m["role"] == "tool":
            line = tool_result_text(m)
            if out and out[-1]["role"] == "user" and out[-1].get("_results"):
                out[-1]["content"] += RESULT_SEPARATOR + line
            else:
                out.append({"role": "user", "content": line, "_results": True})
        elif m["role"] == "assistant":
            msg = {"role": "assistant", "content": m.get("content") or ""}
            if m.get("tool_calls"):
                msg["tool_calls"] = m["tool_calls"]
            out.append(msg)
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    for m in out:
        m.pop("_results", None)
    return out
