"""Diffs of world snapshots: flat key paths mapped to (before, after)."""

from __future__ import annotations

from typing import Any


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}, 'c': {}} -> {'a.b': 1}; lists are leaves, empty dicts vanish."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: obj} if prefix else {}


def state_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Every flat key whose value differs, as ``key -> [before, after]`` (None when absent)."""
    a, b = flatten(before), flatten(after)
    return {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def diff_matches(diff: dict[str, list[Any]], expected: dict[str, list[Any]], allow_list: list[str]) -> bool:
    """True when every expected key changed exactly as expected and every other change is allowed.

    ``allow_list`` holds fnmatch patterns over flat keys (e.g. ``holds.*``).
    """
    from fnmatch import fnmatchcase

    for key, change in expected.items():
        if diff.get(key) != list(change):
            return False
    return all(key in expected or any(fnmatchcase(key, pat) for pat in allow_list) for key in diff)
