"""What the AgentDojo suite's tests share (tests/suites/test_agentdojo*.py): a module of the suite's folder, and
one in-process episode of a task with a reference policy."""

from __future__ import annotations

import asyncio
import importlib
from types import ModuleType
from typing import Any

from topoeval.core.policy import SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import Limits

#: Enough turns and calls for the longest gold plan of the four worlds.
ROLLOUT_LIMITS = Limits(max_turns=24, max_tool_calls=40)


def module(name: str) -> ModuleType:
    """``topoeval_suite_agentdojo.<name>``: the suite's own module (the bridge, the overlay, the tasks...)."""
    SuiteRegistry().get("agentdojo")  # registers the folder as the package topoeval_suite_agentdojo
    return importlib.import_module(f"topoeval_suite_agentdojo.{name}")


def rollout(suite: Any, task: Any, model: str = "oracle", limits: Limits = ROLLOUT_LIMITS) -> dict[str, Any]:
    """The episode record of ``model`` (a reference policy) on ``task``, run in this process."""
    from topoeval.runner.episode import run_episode

    return asyncio.run(run_episode(policy=make_policy(model), suite=suite, task=task, system_prompt="s", demos=[],
                                   limits=limits, sampling=SamplingParams(), sample=0, shots=0, labels={}))
