"""Helpers over a task's gold dependency DAG and over transcripts, shared by suites and metrics."""

from __future__ import annotations

import json
from typing import Any

from topoeval.core.suite import GoldCall


def dag_levels(gold: list[GoldCall]) -> list[list[GoldCall]]:
    """Gold calls grouped by depth: level 0 has no dependencies, level k depends on level < k.

    A call asked for by a later user instruction (``GoldCall.instruction``) comes after every
    call of the earlier instructions: an instruction's calls start one level below the deepest
    call before it. ``len(dag_levels(g))`` is the critical-path length (minimum number of
    tool-calling turns) and ``max(len(level))`` the DAG width.
    """
    by_id = {g.id: g for g in gold}
    depth: dict[str, int] = {}
    floor: dict[int, int] = {}

    def depth_of(node: GoldCall, stack: tuple[str, ...] = ()) -> int:
        if node.id in depth:
            return depth[node.id]
        if node.id in stack:
            raise ValueError(f"gold DAG has a cycle through '{node.id}'")
        parents = [by_id[d] for d in node.depends_on]
        own = 1 + max((depth_of(p, (*stack, node.id)) for p in parents), default=-1)
        depth[node.id] = max(own, floor.get(node.instruction, 0))
        return depth[node.id]

    for k in sorted({g.instruction for g in gold}):  # earlier instructions first
        earlier = [g for g in gold if g.instruction < k]
        floor[k] = 0 if not earlier else 1 + max(depth_of(g) for g in earlier)
    levels: list[list[GoldCall]] = []
    for node in gold:
        d = depth_of(node)
        while len(levels) <= d:
            levels.append([])
        levels[d].append(node)
    return levels


def dependents(gold: list[GoldCall], roots: set[str]) -> set[str]:
    """``roots`` and every node that depends on one of them, directly or not."""
    out = set(roots)
    grew = True
    while grew:
        grew = False
        for g in gold:
            if g.id not in out and out.intersection(g.depends_on):
                out.add(g.id)
                grew = True
    return out


def critical_path(gold: list[GoldCall]) -> int:
    return len(dag_levels(gold))


def dag_width(gold: list[GoldCall]) -> int:
    return max((len(level) for level in dag_levels(gold)), default=0)


def tool_turns(messages: list[dict[str, Any]]) -> int:
    """Number of assistant turns so far that made at least one tool call."""
    return sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))


def tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool name, arguments, observation text) for every answered call, in order."""
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[tuple[str, dict[str, Any], str]] = []
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                try:
                    args = json.loads(c["function"]["arguments"] or "{}")
                except (json.JSONDecodeError, TypeError):
                    args = {}
                pending[c["id"]] = (c["function"]["name"], args if isinstance(args, dict) else {})
        elif m.get("role") == "tool" and m.get("tool_call_id") in pending:
            name, args = pending.pop(m["tool_call_id"])
            out.append((name, args, m.get("content") or ""))
    return out
