"""Diffs of world snapshots: flat key paths mapped to (before, after)."""

from __future__ import annotations

from typing import Any


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists are leaves."""
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: obj} if prefix else {}


def state_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Every flat key whose value differs, as ``key -> [before, after]`` (None when absent)."""
    a, b = flatten(before), flatten(after)
    return {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
