"""A model that plays the simulated user, called synchronously from inside a world's ``ask_user``.

A world's tools are plain functions, so the user model is reached through a blocking call: its
policy (any model :func:`topoeval.policies.registry.make_policy` accepts, with the run's model
options) lives on an event loop of its own in a daemon thread, and :meth:`UserModel.complete`
waits for one reply there. The runner steps a world off its event loop when a user model is set
(``asyncio.to_thread``, :func:`topoeval.runner.episode.run_episode`), so while one episode waits the
run's other episodes go on; calls from several threads share this client's loop. One client per
(model, options) per process, reused by every episode.
A backend failure after the backend's own retries raises :class:`topoeval.core.suite.WorldError`:
the episode is an infrastructure error, retried by the next run of the same command.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import EpisodeContext, SamplingParams
from topoeval.core.suite import WorldError

#: greedy and short: the user answers one question
USER_SAMPLING = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=256, seed=0)

_CLIENTS: dict[tuple[str, str], UserModel] = {}
_LOCK = threading.Lock()


class UserModel:
    """One model behind the simulated user (see the module docstring)."""

    def __init__(self, name: str, options: Any = None):
        from topoeval.policies.registry import is_reference, make_policy

        if is_reference(name):
            raise UserError(f"--user-model {name}: a reference policy cannot play the user; give a language model "
                            "(a litellm name, direct:NAME, smollm2-135m)")
        self.name = name
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"user-model:{name}", daemon=True)
        self._thread.start()
        self._policy = make_policy(name, options)

    def complete(self, system: str, user: str, timeout_s: float = 600.0) -> str:
        """The model's reply text to one system + user message pair."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self.chat(messages, [], timeout_s).content or ""

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
             timeout_s: float = 600.0) -> AssistantMessage:
        """The model's reply — text, or calls of ``tools`` (OpenAI ``tools`` entries) — to a whole conversation
        (OpenAI messages): for a simulated user that keeps its own conversation and may act (τ²'s)."""
        ctx = EpisodeContext(task=None, suite=None, sample=0, shots=0, key="user")  # type: ignore[arg-type]
        future = asyncio.run_coroutine_threadsafe(self._policy.act(messages, tools, USER_SAMPLING, ctx), self._loop)
        try:
            return future.result(timeout_s)
        except Exception as exc:  # the backend failed (after its retries): infrastructure, not the model
            raise WorldError(f"user model {self.name}: {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._policy.aclose(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)


def user_model(name: str, options: Any = None) -> UserModel:
    """The process's client for this user model (made on first use)."""
    key = (name, options.model_dump_json() if hasattr(options, "model_dump_json") else repr(options))
    with _LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = UserModel(name, options)
        return _CLIENTS[key]


def close_user_models() -> None:
    """Close every user model client of this process (their servers and sessions)."""
    with _LOCK:
        clients = list(_CLIENTS.values())
        _CLIENTS.clear()
    for c in clients:
        c.close()
