"""τ² trajectories built straight from a task's gold actions, for τ²'s own evaluator (tests/suites/test_tau2.py).

``gold_trajectory``: the conversation τ²'s orchestrator would record for an agent and a customer who do
exactly the task's gold actions (each run in a live τ² environment set to the task's initial state, so the
tool results are τ²'s), the agent saying what the task wants said, the customer stopping;
``do_nothing_trajectory``: the same conversation where the agent neither acts nor says anything useful.
"""

from __future__ import annotations

from typing import Any


def _env(t2: Any, domain: str, task: Any, solo: bool) -> Any:
    env = t2.registry.get_env_constructor(domain)(solo_mode=solo)
    init = task.initial_state
    env.set_state(initialization_data=init.initialization_data if init else None,
                  initialization_actions=init.initialization_actions if init else None, message_history=[])
    return env


def gold_trajectory(t2: Any, domain: str, task: Any, solo: bool, env: Any = None) -> tuple[list[Any], Any]:
    env = env if env is not None else _env(t2, domain, task, solo)
    said = " ".join(task.evaluation_criteria.communicate_info or [])
    messages: list[Any] = [] if solo else [
        t2.AssistantMessage(role="assistant", content=t2.first_agent_message),
        t2.UserMessage(role="user", content="Hi, I need help with my account."),
    ]
    for i, action in enumerate(task.evaluation_criteria.actions or []):
        requestor = "assistant" if solo else action.requestor
        call = t2.ToolCall(id=f"g{i}", name=action.name, arguments=action.arguments, requestor=requestor)
        cls = t2.AssistantMessage if requestor == "assistant" else t2.UserMessage
        messages.append(cls(role=requestor if requestor == "user" else "assistant", tool_calls=[call]))
        messages.append(env.get_response(call))
    if solo:
        messages.append(t2.AssistantMessage(role="assistant", content=t2.LLMSoloAgent.STOP_TOKEN))
        return messages, t2.TerminationReason.AGENT_STOP
    messages.append(t2.AssistantMessage(role="assistant", content=said or "Your request is done."))
    messages.append(t2.UserMessage(role="user", content="Thanks. ###STOP###"))
    return messages, t2.TerminationReason.USER_STOP


def gold_changes_state(t2: Any, domain: str, task: Any, solo: bool) -> bool:
    """Whether the gold actions leave τ²'s databases (the agent's and the user's) other than they were."""
    env = _env(t2, domain, task, solo)
    before = (env.get_db_hash(), env.get_user_db_hash())
    gold_trajectory(t2, domain, task, solo, env)
    return (env.get_db_hash(), env.get_user_db_hash()) != before


def do_nothing_trajectory(t2: Any, task: Any, solo: bool) -> tuple[list[Any], Any]:
    if solo:
        stop = t2.AssistantMessage(role="assistant", content=t2.LLMSoloAgent.STOP_TOKEN)
        return [stop], t2.TerminationReason.AGENT_STOP
    return [t2.AssistantMessage(role="assistant", content=t2.first_agent_message),
            t2.UserMessage(role="user", content="Hi, I need help with my account."),
            t2.AssistantMessage(role="assistant", content="Sorry, I cannot help with that."),
            t2.UserMessage(role="user", content="Okay. ###STOP###")], t2.TerminationReason.USER_STOP


def reward(t2: Any, domain: str, task: Any, solo: bool, messages: list[Any], reason: Any) -> Any:
    """τ²'s RewardInfo of the trajectory (``evaluate_simulation``, evaluation type ALL)."""
    sim = t2.SimulationRun(id="t", task_id=task.id, start_time="0", end_time="0", duration=0.0,
                           termination_reason=reason, messages=messages)
    return t2.evaluate_simulation(simulation=sim, task=task, evaluation_type=t2.EvaluationType.ALL,
                                  solo_mode=solo, domain=domain)
