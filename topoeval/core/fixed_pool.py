"""What every suite bridged from a fixed task set shares (AgentDojo, BFCL, an MCP task file).

A bridged world is not a generator: it ships a fixed **pool** of tasks. :class:`FixedPoolSuite`
holds the one rule for drawing topoeval's splits from it:

- a subclass says which pool keys each split holds (:meth:`FixedPoolSuite.split_keys`; disjoint
  by construction — how a pool is cut is the bridged suite's own, so that its splits and task-set
  hashes stay what they were) and builds the task of one key (:meth:`FixedPoolSuite.pool_task`);
- the protocol's seed orders a split's keys (:meth:`FixedPoolSuite.order`, default: by
  sha256 of ``"<seed>:<key>"``); a suite whose order is its author's (an MCP task file) sets
  ``seed_orders = False``, and the seed then enters only the task ids;
- ``pool_size`` is the split's size, so a protocol asking for more is rejected when it loads, and
  ``generate``/``tasks`` past the end raise one line naming the size — never a silent truncation.

Shared with it: :func:`derive_topology` (a topology descriptor from tool effects and the shape of
the gold DAGs) and :func:`commit_targets` (the objects a task's irreversible gold calls act on).
"""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, ClassVar

from topoeval.core.errors import UserError
from topoeval.core.gold import critical_path, dag_width
from topoeval.core.suite import Effect, GoldCall, ParamsT, Split, Suite, Task, ToolSpec, TopologyDescriptor


class FixedPoolSuite(Suite[ParamsT]):
    """A suite whose splits are blocks of a fixed task pool (see the module docstring)."""

    #: Whether the protocol's seed orders a split's tasks (False: the pool's own order).
    seed_orders: ClassVar[bool] = True

    @abstractmethod
    def split_keys(self, params: ParamsT, split: Split) -> Sequence[Hashable]:
        """The pool keys ``split`` holds under these parameters, in the pool's own order."""

    @abstractmethod
    def pool_task(self, params: ParamsT, split: Split, seed: int, index: int, key: Any) -> Task:
        """The task of pool entry ``key``, drawn as ``index`` of ``(split, seed)``."""

    def order(self, params: ParamsT, keys: Sequence[Hashable], seed: int) -> list[Any]:
        """``keys`` in the order indices ``0, 1, ...`` draw them under ``seed``."""
        if not self.seed_orders:
            return list(keys)
        return sorted(keys, key=lambda k: hashlib.sha256(f"{seed}:{k}".encode()).digest())

    def pool_note(self, params: ParamsT, split: Split) -> str:
        """What the split's size depends on, for the too-many message (e.g. ' (split_mode: ...)')."""
        return ""

    def too_many(self, params: ParamsT, split: Split, asked: int) -> str:
        """The one line raised when more tasks are asked of ``split`` than it holds."""
        size = len(self.split_keys(params, split))
        return (f"{self.name}: the {split} split holds {size} tasks{self.pool_note(params, split)}, {asked} were "
                "asked for — lower the task count (a fixed task set, not a generator)")

    def pool_size(self, params: ParamsT, split: Split) -> int | None:
        return len(self.split_keys(params, split))

    def generate(self, params: ParamsT, split: Split, seed: int, index: int) -> Task:
        keys = self.order(params, self.split_keys(params, split), seed)
        if not 0 <= index < len(keys):
            raise UserError(self.too_many(params, split, index + 1))
        return self.pool_task(params, split, seed, index, keys[index])

    def tasks(self, params: ParamsT, split: Split, seed: int, n: int) -> list[Task]:
        keys = self.order(params, self.split_keys(params, split), seed)
        if n > len(keys):
            raise UserError(self.too_many(params, split, n))
        return [self.pool_task(params, split, seed, i, keys[i]) for i in range(n)]

    def iter_tasks(self, params: ParamsT, split: Split, seed: int, n: int) -> Iterator[Task]:
        keys = self.order(params, self.split_keys(params, split), seed)
        if n > len(keys):
            raise UserError(self.too_many(params, split, n))
        for i in range(n):
            yield self.pool_task(params, split, seed, i, keys[i])


def derive_topology(tools: Iterable[ToolSpec], golds: Iterable[Sequence[GoldCall]], *, schema_name: str,
                    answer_channel: str, used: set[str], user: str = "none",
                    overrides: dict[str, Any] | None = None) -> TopologyDescriptor:
    """A bridged suite's position on the axes, from what it is made of.

    state: stateful when some tool is not a read; reversibility: some_irreversible when some tool is
    irreversible; dependency: serial when some gold DAG is deeper than one call, independent when
    some is wider than one, mixed when both; distractor_tools: the world tools (not the user channel)
    outside ``used``, the tools some task's plan calls. ``overrides`` (a suite's overlay) win.
    """
    tools = list(tools)
    dags = [list(g) for g in golds]
    effects = {t.effect for t in tools}
    deep = any(critical_path(g) > 1 for g in dags)
    wide = any(dag_width(g) > 1 for g in dags)
    derived = {
        "state": "stateful" if effects - {Effect.read} else "stateless",
        "reversibility": "some_irreversible" if Effect.irreversible in effects else "all_reversible",
        "user": user,
        "ordering": "flat",
        "dependency": "mixed" if deep and wide else ("serial" if deep else "independent"),
        "schema_name": schema_name,
        "answer_channel": answer_channel,
        "distractor_tools": sum(1 for t in tools if t.name not in used and not t.user_channel),
    }
    return TopologyDescriptor.model_validate({**derived, **(overrides or {})})


def commit_targets(gold: Iterable[GoldCall], irreversible: Iterable[str], object_of: Callable[[GoldCall], str], *,
                   unique: bool = False) -> dict[str, list[str]]:
    """Per irreversible tool, the objects the task's gold calls of it act on (``Task.commit_targets``,
    read by the risk metric), in plan order; ``unique`` drops repeats (kept where a suite's task-set
    hashes were made with them)."""
    tools = set(irreversible)
    out: dict[str, list[str]] = {}
    for node in gold:
        if node.tool in tools:
            obj = object_of(node)
            targets = out.setdefault(node.tool, [])
            if not (unique and obj in targets):
                targets.append(obj)
    return out
