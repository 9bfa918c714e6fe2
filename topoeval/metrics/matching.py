"""Matching an agent's calls to the nodes of a task's gold DAG.

Two readings: :func:`match_calls` (for ``serial_violations``: which node does each call perform,
repeats included) and :func:`progress_match` (for progress along the plan, see
:mod:`topoeval.metrics.progress`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topoeval.core.suite import GoldCall, ToolSpec


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.lower().split())
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def _same_arguments(node: GoldCall, call: dict[str, Any], skip: Callable[[Any], bool] | None = None) -> bool:
    args = call.get("arguments") or {}
    return all(_norm(args.get(k)) == _norm(v) for k, v in node.arguments.items() if not (skip and skip(v)))


def call_matches(node: GoldCall, call: dict[str, Any], events: list[dict[str, Any]], hidden: set[str]) -> bool:
    """Whether executed call record ``call`` is an instance of gold ``node``.

    ``events`` are the events this call caused (a user question or confirmation).
    """
    if call["name"] != node.tool or call["status"] != "ok":
        return False
    if node.match == "tool":
        return True
    if node.match == "ask":
        return any(e["type"] == "ask" and set(e["slots"]) & hidden for e in events)
    if node.match == "confirm":
        return any(e["type"] == "confirm" for e in events)
    return _same_arguments(node, call)


def match_calls(gold: list[GoldCall], calls: list[dict[str, Any]], events: list[dict[str, Any]], hidden: set[str]):
    """For each call index, the id of the gold node it matches (or None): the first one no earlier
    call matched, else the first one (repeats match again). Identical gold nodes (the same call
    asked for twice, e.g. in two user instructions) are thus performed by successive calls."""
    by_call: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if "call" in e:
            by_call.setdefault(e["call"], []).append(e)
    taken: set[str] = set()
    out: list[str | None] = []
    for i, c in enumerate(calls):
        hits = [g.id for g in gold if call_matches(g, c, by_call.get(i, []), hidden)]
        node = next((h for h in hits if h not in taken), hits[0] if hits else None)
        if node is not None:
            taken.add(node)
        out.append(node)
    return out


def progress_match(node: GoldCall, call: dict[str, Any], tools: dict[str, ToolSpec],
                   skip: Callable[[Any], bool] | None = None) -> bool:
    """Whether ``call`` makes the progress world node ``node`` stands for.

    A successful call of the node's tool is needed. A write or irreversible node (hold, pay,
    book) is then matched whatever object it names — the choice is judged by ``success``,
    ``priority`` and ``risk``; a ``tool`` node likewise; an ``args`` node needs the gold
    arguments, compared normalised, except those for which ``skip(value)`` is true.
    """
    if call["name"] != node.tool or call["status"] != "ok":
        return False
    spec = tools.get(node.tool)
    if node.match != "args" or (spec is not None and spec.effect.value in ("write", "irreversible")):
        return True
    return _same_arguments(node, call, skip)
