"""Importing AgentDojo lazily, without its LLM pipeline, and loading one of its domains.

AgentDojo's task-suite module imports ``agentdojo.agent_pipeline``, whose ``__init__`` pulls in
the OpenAI, Anthropic, Google and Cohere SDKs (about 290 MB and 4 s of imports). The suite needs
none of them: only the environments, the tools, the user tasks and their utility checks. So
before the first import, :func:`agentdojo_modules` registers ``agentdojo.agent_pipeline`` and its
``llms`` sub-package as bare packages (their ``__init__`` files never run; the small submodules the
task suites need still load from the real folder) and stands in for the one name the tool
executor takes from ``llms.google_llm``. That depends on the package's layout, so the version is
pinned (:data:`VERSION`) and checked.

Nothing here runs until a topology names the suite: ``topoeval --help`` and every other suite
never import AgentDojo.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import re
import sys
import types
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from topoeval.core.errors import UserError

#: The AgentDojo release the import shim and the annotations were written against.
VERSION = "0.1.35"
#: AgentDojo's benchmark version whose user tasks the suite serves.
BENCHMARK = "v1.2.2"
DOMAINS = ("workspace", "travel", "banking", "slack")
INSTALL_HINT = (
    f"the agentdojo suite needs AgentDojo {VERSION}: pip install 'topoeval[agentdojo]' (or, without the LLM SDKs "
    f"AgentDojo declares, pip install 'topoeval[agentdojo-lean]' && pip install --no-deps agentdojo=={VERSION})"
)
#: What ``agentdojo.agent_pipeline.tool_execution`` imports from ``llms.google_llm`` (its value in 0.1.35).
_GOOGLE_EMPTY_FUNCTION_NAME = "<empty-function-name>"


def _bare_package(name: str, folder: str) -> types.ModuleType:
    """Register ``name`` as a package whose submodules load from ``folder`` but whose ``__init__`` never runs."""
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [folder]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


def _install_shim(root: str) -> None:
    if "agentdojo.agent_pipeline" in sys.modules:  # imported for real (the full install): nothing to do
        return
    importlib.import_module("agentdojo")  # its __init__ is empty in 0.1.35
    _bare_package("agentdojo.agent_pipeline", os.path.join(root, "agent_pipeline"))
    _bare_package("agentdojo.agent_pipeline.llms", os.path.join(root, "agent_pipeline", "llms"))
    google = types.ModuleType("agentdojo.agent_pipeline.llms.google_llm")
    google.EMPTY_FUNCTION_NAME = _GOOGLE_EMPTY_FUNCTION_NAME  # type: ignore[attr-defined]
    sys.modules[google.__name__] = google
    sys.modules["agentdojo.agent_pipeline.llms"].google_llm = google  # type: ignore[attr-defined]


@lru_cache(maxsize=1)
def agentdojo_modules() -> types.SimpleNamespace:
    """The AgentDojo modules the suite uses, imported behind the shim (a clear error when missing)."""
    spec = importlib.util.find_spec("agentdojo")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(INSTALL_HINT)
    installed = importlib.metadata.version("agentdojo")
    if installed != VERSION:
        raise UserError(f"the agentdojo suite is pinned to AgentDojo {VERSION} but {installed} is installed: "
                        f"pip install --no-deps agentdojo=={VERSION}")
    _install_shim(spec.submodule_search_locations[0])
    try:
        load_suites = importlib.import_module("agentdojo.task_suite.load_suites")
        tool_execution = importlib.import_module("agentdojo.agent_pipeline.tool_execution")
        runtime = importlib.import_module("agentdojo.functions_runtime")
        agent_types = importlib.import_module("agentdojo.types")
    except ImportError as exc:  # one of the few dependencies it needs is missing
        raise UserError(f"AgentDojo {VERSION} cannot be imported ({exc}); {INSTALL_HINT}") from None
    return types.SimpleNamespace(
        get_suite=load_suites.get_suite,
        tool_result_to_str=tool_execution.tool_result_to_str,
        FunctionCall=runtime.FunctionCall,
        FunctionsRuntime=runtime.FunctionsRuntime,
        text_block=agent_types.text_content_block_from_string,
    )


@dataclass(frozen=True)
class Domain:
    """One AgentDojo domain: its task suite, default environment and user tasks (in AgentDojo's order)."""

    name: str
    suite: Any
    #: the environment with the injection vectors at their benign defaults (AgentDojo's utility runs)
    environment: Any
    #: user task id ('user_task_3') -> task object
    tasks: dict[str, Any]
    #: the domain's frozen clock: the first midnight after the latest date-time in its environment
    clock: datetime

    def fresh_environment(self, task_id: str) -> Any:
        """A deep copy of the environment, initialised by user task ``task_id`` as AgentDojo does."""
        return self.tasks[task_id].init_environment(self.environment.model_copy(deep=True))


def task_number(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[1])


@lru_cache(maxsize=None)
def load_domain(name: str) -> Domain:
    """Load (once per process) one of AgentDojo's four domains at :data:`BENCHMARK`."""
    if name not in DOMAINS:
        raise UserError(f"unknown AgentDojo domain '{name}' (known: {', '.join(DOMAINS)})")
    ad = agentdojo_modules()
    suite = ad.get_suite(BENCHMARK, name)
    env = suite.load_and_inject_default_environment({})
    tasks = dict(sorted(suite.user_tasks.items(), key=lambda kv: task_number(kv[0])))
    return Domain(name=name, suite=suite, environment=env, tasks=tasks, clock=_clock_after(env))


_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def _clock_after(env: Any) -> datetime:
    """The first midnight after every date-time in ``env``: what "now" is in this world."""
    latest = datetime(2000, 1, 1)

    def walk(obj: Any) -> None:
        nonlocal latest
        if isinstance(obj, dict):
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)
        elif isinstance(obj, str) and _DATETIME.match(obj):
            try:
                latest = max(latest, datetime.fromisoformat(obj[:19]).replace(tzinfo=None))
            except ValueError:
                pass

    walk(env.model_dump(mode="json"))
    return datetime.combine(latest.date() + timedelta(days=1), datetime.min.time())
