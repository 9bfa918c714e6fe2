"""τ²'s user simulator, driven by the model the run names for the user (``--user-model``).

τ²'s own ``UserSimulator`` runs unchanged — its system prompt (the simulation guidelines and the task's
user scenario), its role flipping, its device tools (telecom), its stop signals — except for the one call
that asks a model for the user's next message: τ²'s ``generate`` (litellm) is routed, for the users made
here, to topoeval's user model (:func:`topoeval.policies.user_model.user_model`: any model topoeval can run,
a litellm name, ``direct:NAME`` behind ``--api-base`` or the embedded model, with topoeval's user sampling).
Every other model name goes to τ²'s own ``generate`` as before.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.users import active_user, active_user_options

from .bridge import tau2_modules

#: the line a non-solo τ² topology fails with when the run names no user model
NEEDS_USER_MODEL = ("a τ² topology that is not solo needs a model to play the customer (τ²'s user simulator): "
                    "name one with --user-model MODEL (a litellm name, or direct:NAME with --api-base), or "
                    "user_model= in topoeval.run_protocol; telecom's solo mode (params: {solo: true}) needs none")

_ROUTED: dict[str, Any] = {}
_LOCK = threading.Lock()
_ORIGINAL: list[Any] = []


def _routed_generate(model: str, messages: list[Any], tools: list[Any] | None = None, **kwargs: Any) -> Any:
    """τ²'s ``generate`` with the users made here answered by topoeval's user model."""
    client = _ROUTED.get(model)
    if client is None:
        return _ORIGINAL[0](model=model, messages=messages, tools=tools, **kwargs)
    t2 = tau2_modules()
    specs = [t.openai_schema for t in tools or []]
    reply = client.chat(t2.to_litellm_messages(messages), specs)
    calls = []
    for i, c in enumerate(reply.tool_calls):
        try:
            arguments = json.loads(c.arguments or "{}")
        except json.JSONDecodeError:
            arguments = {}
        calls.append(t2.ToolCall(id=c.id or f"user_call_{i}", name=c.name,
                                 arguments=arguments if isinstance(arguments, dict) else {}, requestor="assistant"))
    usage = {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens}
    return t2.AssistantMessage(role="assistant", content=reply.content if not calls else None,
                               tool_calls=calls or None, usage=usage, cost=reply.cost)


def _install_route() -> None:
    t2 = tau2_modules()
    with _LOCK:
        if not _ORIGINAL:
            _ORIGINAL.append(t2.user_simulator_module.generate)
            t2.user_simulator_module.generate = _routed_generate


def user_simulator(task: Any, environment: Any) -> Any:
    """τ²'s ``UserSimulator`` for ``task`` (the user's device tools where the domain has them), played by the
    run's user model; a one-line :class:`UserError` when the run names none."""
    model = active_user().model
    if model is None:
        raise UserError(NEEDS_USER_MODEL)
    from topoeval.policies.user_model import user_model

    client = user_model(model, active_user_options())
    _install_route()
    key = f"topoeval-user:{id(client)}:{model}"
    _ROUTED[key] = client
    tools = environment.get_user_tools() if environment.user_tools is not None else None
    return tau2_modules().UserSimulator(tools=tools, instructions=str(task.user_scenario), llm=key, llm_args={})
