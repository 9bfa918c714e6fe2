"""What a task may change in its world, and a world's state seen as entities.

Collateral damage (:mod:`topoeval.metrics.collateral`) is read at the level of *entities*: a
reservation, a customer's line, an email, a file — the things a user would name when asked what
an agent touched. A suite says how its snapshot splits into entities
(:meth:`topoeval.core.suite.Suite.collateral_entities`, by default the paths two levels deep) and
what a task may change (:class:`CollateralScope`: the world after the gold plan, a declared list of
entity patterns, or both).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class CollateralScope(BaseModel):
    """What one task may change: the entities a run may touch without collateral damage."""

    model_config = ConfigDict(extra="forbid")

    gold_state: dict[str, Any] | None = Field(
        default=None,
        description="The world's snapshot after the task's gold plan ran on a fresh world (the same shape as "
        "World.snapshot()); every entity it changed is in scope and its value there is the right end value. "
        "None: the task gives only declared patterns.",
    )
    in_scope: list[str] = Field(
        default_factory=list,
        description="fnmatch patterns over entity names the task may change whatever the gold plan did (a task "
        "file's declared scope, or entities whose end value is not unique: a hold that may be placed and released).",
    )
    ignore: list[str] = Field(
        default_factory=list,
        description="fnmatch patterns over entity names that are bookkeeping, not things a user owns (a clock, "
        "a counter of ids): never reported, in scope or out.",
    )

    def declared(self, entity: str) -> bool:
        """Whether a declared pattern puts ``entity`` in scope."""
        return any(fnmatchcase(entity, p) for p in self.in_scope)

    def ignored(self, entity: str) -> bool:
        return any(fnmatchcase(entity, p) for p in self.ignore)


def entities_at_depth(snapshot: dict[str, Any], depth: int = 2) -> dict[str, Any]:
    """The snapshot's entities: every path ``depth`` levels deep (names joined with ``.``), each with
    its whole value; a value that is not a mapping ends its path early (``balance`` in
    ``{"balance": 3, "bookings": {"B1": {...}}}`` is one entity, ``bookings.B1`` another); an empty
    mapping above ``depth`` holds no entity."""
    out: dict[str, Any] = {}

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if len(path) < depth and isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, (*path, str(key)))
        elif path:
            out[".".join(path)] = value

    walk(snapshot, ())
    return out


_ABSENT = object()


def changed_entities(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    """Names of the entities whose value differs between two entity maps (added and removed included)."""
    return {k for k in set(before) | set(after) if before.get(k, _ABSENT) != after.get(k, _ABSENT)}
