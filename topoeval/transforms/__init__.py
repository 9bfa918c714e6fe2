"""Topology transforms (suite -> suite, one axis each).

A protocol names transforms in a topology's ``transforms:`` list; unknown names and arguments are
rejected when the protocol loads (each transform's arguments are a typed model: :mod:`.args`). Each returns a suite that looks like a new suite to the runner, the
metrics and the oracle. Transforms compose, applied in the order listed.

| transform | axis | args |
|---|---|---|
| ``rename_tools`` | schema | ``seed`` — every tool gets a seeded synonym (``search`` → ``find_articles``) |
| ``rename_args`` | schema | ``seed`` — every argument gets a seeded synonym (``query`` → ``q``) |
| ``distractor_tools`` | schema | ``n`` (1–6, default 2) — adds n read-only tools no task needs |
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

from .args import DistractorArgs, HideSlotsArgs, NoArgs, SeedArgs, ToolFormatArgs, TransformArgs, parse_transform_args
from .batching import batch_api, no_batch
from .formats import tool_format
from .params import SuiteView, hide_slots, merge_hold_pay, refundable, shuffle_priority, split_instructions
from .renaming import TransformedSuite, distractor_tools, rename_args, rename_tools

__all__ = ["RENAMING", "SuiteView", "TransformArgs", "TransformedSuite", "apply_transforms", "known_transforms",
           "transform_args_model", "transform_axis"]

Transform = Callable[[Suite, Any], Suite]

#: name -> (function, axis it moves, the typed model of its arguments)
_REGISTRY: dict[str, tuple[Transform, str, type[TransformArgs]]] = {
    "rename_tools": (rename_tools, "schema", SeedArgs),
    "rename_args": (rename_args, "schema", SeedArgs),
    "distractor_tools": (distractor_tools, "schema", DistractorArgs),
    "hide_slots": (hide_slots, "user", HideSlotsArgs),
    "shuffle_priority": (shuffle_priority, "ordering", SeedArgs),
    "merge_hold_pay": (merge_hold_pay, "reversibility", NoArgs),
    "refundable": (refundable, "reversibility", NoArgs),
    "batch_api": (batch_api, "dependency", NoArgs),
    "no_batch": (no_batch, "dependency", NoArgs),
    "split_instructions": (split_instructions, "instructions", NoArgs),
    "tool_format": (tool_format, "format", ToolFormatArgs),
}

#: Transforms that rename the vocabulary; none may follow ``batch_api``.
RENAMING = ("rename_tools", "rename_args")


def known_transforms() -> dict[str, Transform]:
    return {name: fn for name, (fn, _, _) in _REGISTRY.items()}


def transform_axis(name: str) -> str:
    return _REGISTRY[name][1]


def transform_args_model(name: str) -> type[TransformArgs]:
    """The typed model of a known transform's arguments (:mod:`topoeval.transforms.args`)."""
    return _REGISTRY[name][2]


def apply_transforms(suite: Suite, specs: list) -> Suite:
    """Apply the protocol's transform specs in order, each with its arguments checked (one-line UserError)."""
    from topoeval.core.errors import UserError

    batched = False
    for spec in specs:
        if batched and spec.name in RENAMING:
            raise UserError(f"'{spec.name}' cannot follow 'batch_api' (it would not rename the fields of the "
                            "batch requests); list batch_api after the renames")
        batched = batched or spec.name == "batch_api"
        fn, _, model = _REGISTRY[spec.name]
        suite = fn(suite, parse_transform_args(spec.name, model, spec.args))
    return suite
