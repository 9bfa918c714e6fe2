"""One episode of one τ² task: τ²'s environment, the τ² message trajectory, and τ²'s user.

Every call the agent makes reaches τ²'s own ``Environment.get_response`` (its argument handling, its error
strings, its database); the world keeps the conversation as τ²'s orchestrator would have it (its message
models, in order), which is what τ²'s evaluator reads (:meth:`Tau2World.simulation`).

Talking to the user: the agent sends a message with the ``send_message_to_user`` tool and reads the
customer's reply in its result (topoeval's user channel; in τ² the agent's text is the message). The first
one is the agent's greeting (τ² sends a fixed one). The customer is τ²'s ``UserSimulator`` (:mod:`.user`);
where it calls its device's tools (telecom), they run in the same environment, as τ²'s orchestrator runs
them, before its reply. The conversation is over when the customer sends a stop signal (``###STOP###``,
``###TRANSFER###``, ``###OUT-OF-SCOPE###``) or the agent ends its turn without a tool call. In solo mode
(telecom) there is no customer: the agent has the device tools too, and τ²'s ``done`` tool ends the ticket.

:meth:`Tau2World.snapshot` is the environment's databases as JSON — ``{"db": {table: {id: record}},
"user_db": ...}`` — so the state before and after an episode (the runner's ``state_diff``) reads per
entity: ``db.reservations.EHGLP3.status``.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from topoeval.core.suite import ToolError, World

from .bridge import new_environment, tau2_modules

SEND = "send_message_to_user"
DONE = "done"
#: most user-tool rounds before the customer must say something (τ²'s orchestrator has max_steps instead)
MAX_USER_TOOL_ROUNDS = 20
#: a customer's reply that agrees, and one that refuses (refusal wins): how confirm events are read
YES = re.compile(r"\b(yes|yeah|yep|sure|go ahead|proceed|please do|confirm(ed)?|that's right|correct)\b", re.I)
NO = re.compile(r"\b(no|nope|don't|do not|cancel that|wait|stop)\b(?!#)", re.I)


class Tau2World(World):
    """The live environment and conversation of one episode (see the module docstring)."""

    def __init__(self, data: dict[str, Any]):
        t2 = tau2_modules()
        self.domain: str = data["domain"]
        self.solo: bool = data["solo"]
        self.task = t2.Task.model_validate(data["tau2_task"])
        self.effects: dict[str, dict[str, Any]] = data["tools"]
        self.confirmable: list[str] = data.get("confirmable", [])
        self.env = new_environment(self.domain, self.solo)
        init = self.task.initial_state
        self.env.set_state(
            initialization_data=init.initialization_data if init is not None else None,
            initialization_actions=init.initialization_actions if init is not None else None,
            message_history=[],
        )
        #: τ²'s messages of the conversation so far (what its evaluator reads)
        self.trajectory: list[Any] = []
        self.events: list[dict[str, Any]] = []
        #: who ended the conversation: None (still open), 'user' (a stop signal) or 'agent' (solo: done)
        self.stopped: str | None = None
        self.started = time.time()
        self._calls = 0
        self.user: Any = None
        self.user_state: Any = None
        if not self.solo:
            from .user import user_simulator

            self.user = user_simulator(self.task, self.env)
            self.user_state = self.user.get_init_state()

    # -- calls ---------------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if self.stopped is not None:
            who = "the customer ended the conversation" if self.stopped == "user" else "the ticket is closed (done)"
            raise ToolError(f"{who}: nothing more can be done; end your turn without a tool call")
        t2 = tau2_modules()
        if name == SEND and not self.solo:
            return self._talk(str(arguments.get("message", "")))
        if name == DONE and self.solo:
            stop = t2.LLMSoloAgent.STOP_TOKEN
            self.trajectory.append(t2.AssistantMessage(role="assistant", content=stop))
            self.stopped = "agent"
            return stop
        self._calls += 1
        call = t2.ToolCall(id=f"call_{self._calls}", name=name, arguments=dict(arguments), requestor="assistant")
        self.trajectory.append(t2.AssistantMessage(role="assistant", tool_calls=[call]))
        reply = self.env.get_response(call)
        self.trajectory.append(reply)
        spec = self.effects.get(name) or {}
        if spec.get("effect") == "irreversible" and not reply.error:
            obj = arguments.get(spec["object"]) if spec.get("object") else None
            self.events.append({"type": "commit", "tool": name, "object": "" if obj is None else str(obj)})
        if reply.error:
            raise ToolError(reply.content)
        return reply.content

    def _talk(self, text: str) -> str:
        """Send the agent's message to τ²'s user and return the customer's reply (after any device actions)."""
        t2 = tau2_modules()
        message: Any = t2.AssistantMessage(role="assistant", content=text)
        self.trajectory.append(message)
        for _ in range(MAX_USER_TOOL_ROUNDS):
            reply, self.user_state = self.user.generate_next_message(message, self.user_state)
            self.trajectory.append(reply)
            if not reply.is_tool_call():
                if self.user.is_stop(reply):
                    self.stopped = "user"
                self._confirmations(text, reply.content or "")
                return reply.content or ""
            results = []
            for call in reply.tool_calls:
                call.requestor = "user"
                result = self.env.get_response(call)
                results.append(result)
                self.events.append({"type": "user_call", "tool": call.name, "arguments": call.arguments,
                                    "error": bool(result.error)})
            self.trajectory.extend(results)
            message = results[0] if len(results) == 1 else t2.MultiToolMessage(
                role="tool", tool_messages=results)
        return "(the customer is busy with their device and says nothing)"

    def _confirmations(self, asked: str, answer: str) -> None:
        """``confirm`` events (the risk dimension's) from one exchange: each object the task's irreversible
        gold calls act on that the agent's message names, answered yes or no by the customer's reply (read by
        :data:`YES` / :data:`NO`; neither: no event)."""
        named = [o for o in self.confirmable if o in asked]
        said = "no" if NO.search(answer) else "yes" if YES.search(answer) else None
        if said is not None:
            self.events.extend({"type": "confirm", "object": o, "answer": said} for o in named)

    # -- the end of the episode -----------------------------------------------------------------
    def simulation(self, final_answer: str | None) -> Any:
        """τ²'s ``SimulationRun`` of the episode: the trajectory, ended as topoeval ended it.

        ``final_answer`` None (the turn or call limit, an error): τ²'s ``max_steps``. Otherwise solo: the
        ticket closed with ``done`` (or the stop token in the text) is τ²'s agent stop, any other text an agent
        error, as in τ²'s solo orchestrator; with a customer: their stop signal, or else the agent's last
        message (appended to the conversation) ends it as an agent stop.
        """
        t2 = tau2_modules()
        reasons = t2.TerminationReason
        messages = list(self.trajectory)
        stop = t2.LLMSoloAgent.STOP_TOKEN
        if final_answer is None:
            reason = reasons.MAX_STEPS
        elif self.solo:
            if self.stopped is None and stop in final_answer:
                messages.append(t2.AssistantMessage(role="assistant", content=stop))
            reason = reasons.AGENT_STOP if self.stopped or stop in final_answer else reasons.AGENT_ERROR
        elif self.stopped == "user":
            reason = reasons.USER_STOP
        else:
            if final_answer.strip():
                messages.append(t2.AssistantMessage(role="assistant", content=final_answer))
            reason = reasons.AGENT_STOP
        now = time.time()
        return t2.SimulationRun(id=str(uuid.uuid4()), task_id=self.task.id, start_time=str(self.started),
                                end_time=str(now), duration=now - self.started, termination_reason=reason,
                                messages=messages)

    def snapshot(self) -> dict[str, Any]:
        """The environment's databases: ``{"db": ..., "user_db": ...}`` (the latter where the domain has a
        user side: telecom's device), each ``{table: {id: record}}`` as τ² holds it."""
        out = {"db": self.env.tools.db.model_dump(mode="json")}
        if self.env.user_tools is not None and getattr(self.env.user_tools, "db", None) is not None:
            out["user_db"] = self.env.user_tools.db.model_dump(mode="json")
        return out
