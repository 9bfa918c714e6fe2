"""Topology transforms (suite -> suite, one axis each).

The registry maps a transform name to a function ``(suite, args) -> suite``. Protocols name
transforms in a topology's ``transforms:`` list; unknown names are rejected at load time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topoeval.suite import Suite

Transform = Callable[[Suite, dict[str, Any]], Suite]

_REGISTRY: dict[str, Transform] = {}


def known_transforms() -> dict[str, Transform]:
    return dict(_REGISTRY)


def apply_transforms(suite: Suite, specs: list) -> Suite:
    """Apply the protocol's transform specs in order."""
    for spec in specs:
        suite = _REGISTRY[spec.name](suite, spec.args)
    return suite
