"""The one delegating suite every transform's result is built on.

:class:`DelegatingSuite` is ``inner`` seen through a transform: each member of the suite contract
listed in :data:`FORWARDED` goes to ``inner`` unless the transform overrides it. A transform changes
tasks on their way out through :meth:`DelegatingSuite.outer_task` (``generate``, ``tasks`` and ``iter_tasks``
all pass through it) and the topology through ``topology_update``; everything else it overrides by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topoeval.core.collateral import CollateralScope
from topoeval.core.messages import AssistantMessage
from topoeval.core.suite import Split, Suite, SuiteManifest, Task, ToolSpec, TopologyDescriptor, World

#: The suite contract a delegating suite forwards to its inner suite (a test keeps it whole).
FORWARDED = ("parse_params", "task_problems", "tools_for", "topology_for", "system_prompt", "expand_calls",
             "generate", "tasks", "iter_tasks", "pool_size", "make_world", "score", "oracle", "rationale",
             "behaviour_version", "require_extra", "unavailable", "run_problems", "ends_episode", "collateral_scope",
             "collateral_entities", "collateral_call")


class DelegatingSuite(Suite[Any]):
    """``inner`` under another manifest; every member of :data:`FORWARDED` is the inner suite's
    unless overridden (``topology_for`` applies ``topology_update``; tasks pass :meth:`outer_task`)."""

    def __init__(self, inner: Suite, manifest: SuiteManifest, topology_update: dict[str, Any] | None = None):
        self.inner = inner
        self.Params = inner.Params  # type: ignore[misc]  # a view takes its inner suite's params model
        self.topology_update = topology_update or {}
        super().__init__(manifest, inner.folder)

    def outer_task(self, task: Task) -> Task:
        """An inner task as this suite poses it (default: unchanged)."""
        return task

    def parse_params(self, params: dict[str, Any] | None) -> Any:
        return self.inner.parse_params(params)

    def task_problems(self, params: Any) -> list[str]:
        return self.inner.task_problems(params)

    def tools_for(self, params: Any) -> list[ToolSpec]:
        return self.inner.tools_for(params)

    def topology_for(self, params: Any) -> TopologyDescriptor:
        return self.inner.topology_for(params).model_copy(update=self.topology_update)

    def system_prompt(self, params: Any) -> str:
        return self.inner.system_prompt(params)

    def expand_calls(self, calls: list[dict[str, Any]], events: list[dict[str, Any]]):
        return self.inner.expand_calls(calls, events)

    def generate(self, params: Any, split: Split, seed: int, index: int) -> Task:
        return self.outer_task(self.inner.generate(params, split, seed, index))

    def tasks(self, params: Any, split: Split, seed: int, n: int) -> list[Task]:
        return [self.outer_task(t) for t in self.inner.tasks(params, split, seed, n)]

    def iter_tasks(self, params: Any, split: Split, seed: int, n: int) -> Iterator[Task]:
        for task in self.inner.iter_tasks(params, split, seed, n):
            yield self.outer_task(task)

    def pool_size(self, params: Any, split: Split) -> int | None:
        return self.inner.pool_size(params, split)

    def make_world(self, task: Task) -> World:
        return self.inner.make_world(task)

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        return self.inner.score(task, final_answer, world)

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        return self.inner.oracle(task, messages, variant)

    def rationale(self, task: Task, messages: list[dict[str, Any]], calls: list[dict[str, Any]]) -> str | None:
        return self.inner.rationale(task, messages, calls)

    def behaviour_version(self) -> str | None:
        return self.inner.behaviour_version()

    def require_extra(self) -> None:
        self.inner.require_extra()

    def unavailable(self) -> str | None:
        return self.inner.unavailable()

    def run_problems(self, params: Any, user_model: str | None) -> list[str]:
        return self.inner.run_problems(params, user_model)

    def ends_episode(self, task: Task, tool: str) -> bool:
        return self.inner.ends_episode(task, tool)

    def collateral_scope(self, task: Task) -> CollateralScope | None:
        return self.inner.collateral_scope(task)

    def collateral_entities(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return self.inner.collateral_entities(snapshot)

    def collateral_call(self, task: Task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        return self.inner.collateral_call(task, messages)
