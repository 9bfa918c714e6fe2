"""Topology transforms (suite -> suite, one axis each).

A protocol names transforms in a topology's ``transforms:`` list; unknown names are rejected
when the protocol loads. Each returns a suite that looks like a new suite to the runner, the
metrics and the oracle. Transforms compose, applied in the order listed.

| transform | axis | args |
|---|---|---|
| ``rename_tools`` | schema | ``seed`` — every tool gets a seeded synonym (``search`` → ``find_articles``) |
| ``rename_args`` | schema | ``seed`` — every argument gets a seeded synonym (``query`` → ``q``) |
| ``distractor_tools`` | schema | ``n`` — adds n read-only tools no task needs |
| ``hide_slots`` | user | ``slots`` — these task facts move behind the user (suites with a ``hide`` parameter) |
| ``shuffle_priority`` | ordering | ``seed`` — re-draws the priority orders (suites with a ``priority_seed`` parameter) |
| ``merge_hold_pay`` | reversibility | — hold + pay become one irreversible ``book`` (suites with a ``booking`` parameter) |
| ``batch_api`` | dependency | — adds ``<tool>_batch`` for each read-only parallel-safe tool (one call, many look-ups) |
| ``no_batch`` | dependency | — one tool call per turn; parallelism no longer applies |
| ``refundable`` | reversibility | — nothing is irreversible: payments refund in full, no confirmation (``refundable`` parameter) |
| ``split_instructions`` | instructions | — each task becomes a conversation of dependent user instructions (``instructions`` parameter) |
| ``tool_format`` | format | ``format`` — the same topology, the model addressed in another tool-call format (``native``, ``hermes``, ...) |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topoeval.core.suite import Suite

from .batching import batch_api, no_batch
from .formats import tool_format
from .params import SuiteView, hide_slots, merge_hold_pay, refundable, shuffle_priority, split_instructions
from .renaming import TransformedSuite, distractor_tools, rename_args, rename_tools

__all__ = ["RENAMING", "SuiteView", "TransformedSuite", "apply_transforms", "known_transforms", "transform_axis"]

Transform = Callable[[Suite, dict[str, Any]], Suite]

#: name -> (function, axis it moves)
_REGISTRY: dict[str, tuple[Transform, str]] = {
    "rename_tools": (rename_tools, "schema"),
    "rename_args": (rename_args, "schema"),
    "distractor_tools": (distractor_tools, "schema"),
    "hide_slots": (hide_slots, "user"),
    "shuffle_priority": (shuffle_priority, "ordering"),
    "merge_hold_pay": (merge_hold_pay, "reversibility"),
    "refundable": (refundable, "reversibility"),
    "batch_api": (batch_api, "dependency"),
    "no_batch": (no_batch, "dependency"),
    "split_instructions": (split_instructions, "instructions"),
    "tool_format": (tool_format, "format"),
}

#: Transforms that rename the vocabulary; none may follow ``batch_api``.
RENAMING = ("rename_tools", "rename_args")


def known_transforms() -> dict[str, Transform]:
    return {name: fn for name, (fn, _) in _REGISTRY.items()}


def transform_axis(name: str) -> str:
    return _REGISTRY[name][1]


def apply_transforms(suite: Suite, specs: list) -> Suite:
    """Apply the protocol's transform specs in order."""
    from topoeval.core.errors import UserError

    batched = False
    for spec in specs:
        if batched and spec.name in RENAMING:
            raise UserError(f"'{spec.name}' cannot follow 'batch_api' (it would not rename the fields of the "
                            "batch requests); list batch_api after the renames")
        batched = batched or spec.name == "batch_api"
        suite = _REGISTRY[spec.name][0](suite, spec.args)
    return suite
