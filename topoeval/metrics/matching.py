"""Matching an agent's calls to the nodes of a task's gold DAG (for serial violations)."""

from __future__ import annotations

from typing import Any

from topoeval.core.suite import GoldCall


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.lower().split())
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


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
    args = call.get("arguments") or {}
    return all(_norm(args.get(k)) == _norm(v) for k, v in node.arguments.items())


def match_calls(gold: list[GoldCall], calls: list[dict[str, Any]], events: list[dict[str, Any]], hidden: set[str]):
    """For each call index, the id of the first gold node it matches (or None)."""
    by_call: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if "call" in e:
            by_call.setdefault(e["call"], []).append(e)
    return [
        next((g.id for g in gold if call_matches(g, c, by_call.get(i, []), hidden)), None) for i, c in enumerate(calls)
    ]
