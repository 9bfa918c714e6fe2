"""One episode's AgentDojo environment, driven through AgentDojo's own ``FunctionsRuntime``.

Calls run exactly as AgentDojo runs them (its argument models, its dependency injection, its
error strings); observations are AgentDojo's own YAML rendering of the result
(``tool_result_to_str``), which is what its agents read. The world keeps what the utility
check needs: the environment before the first call, the environment now, and the call trace.
"""

from __future__ import annotations

from typing import Any

from topoeval.core.suite import ToolError, World

from .bridge import Domain, agentdojo_modules
from .clock import EpisodeClock, frozen
from .overlay import DomainAnnotations


#: Results AgentDojo builds from a ``set`` (their order would follow the process's hash seed):
#: the list is sorted in place, in the state and the observation alike. AgentDojo's checks
#: compare these lists as sets.
SET_ORDERED = {"create_calendar_event": "participants"}


class AgentDojoWorld(World):
    """The live environment of one episode of one AgentDojo user task."""

    def __init__(self, domain: Domain, user_task: str, annotations: DomainAnnotations):
        ad = agentdojo_modules()
        self.domain, self.user_task, self.annotations = domain, user_task, annotations
        self.env = domain.fresh_environment(user_task)
        #: the environment before the episode (AgentDojo's ``pre_environment``)
        self.pre_env = self.env.model_copy(deep=True)
        self.runtime = ad.FunctionsRuntime(domain.suite.tools)
        self.clock = EpisodeClock(domain.clock)
        #: every call that reached the world, as AgentDojo's ``FunctionCall`` (its utility may read it)
        self.trace: list[Any] = []
        self.events: list[dict[str, Any]] = []
        self._exclude = _derived_fields(self.env)
        self._format = ad.tool_result_to_str
        self._function_call = ad.FunctionCall

    def execute(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one call through AgentDojo's runtime under the episode clock; its raw result."""
        self.trace.append(self._function_call(function=name, args=dict(arguments), id=f"call_{len(self.trace)}"))
        with frozen(self.clock):
            result, error = self.runtime.run_function(self.env, name, arguments)
        if error is not None:
            raise ToolError(error)
        field = SET_ORDERED.get(name)
        if field and isinstance(getattr(result, field, None), list):
            getattr(result, field).sort()
        spec = self.annotations.tools.get(name)
        if spec is not None and spec.effect == "irreversible":
            self.events.append({"type": "commit", "tool": name, "object": spec.object_of(arguments)})
        return result

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self._format(self.execute(name, arguments))

    def snapshot(self) -> dict[str, Any]:
        """The environment as JSON, without AgentDojo's derived views (``initial_*`` lists, computed fields)."""
        return self.env.model_dump(mode="json", exclude=self._exclude)


def _derived_fields(env: Any) -> dict[str, set[str]]:
    """Per component of the environment, the fields that repeat state held elsewhere: the
    ``initial_*`` lists a component was built from, and pydantic computed fields (``inbox.sent``)."""
    out: dict[str, set[str]] = {}
    for name in type(env).model_fields:
        part = getattr(env, name)
        cls = type(part)
        if hasattr(cls, "model_fields"):
            derived = {f for f in cls.model_fields if f.startswith("initial_")} | set(cls.model_computed_fields)
            if derived:
                out[name] = derived
    return out
