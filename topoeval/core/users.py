"""Which simulated user answers ``ask_user`` in the episodes being run.

The deterministic, rule-based user of each suite is the default and the reference. ``--user-model M``
(``RunConfig.user_model``) makes an LLM play the user instead, from the same hidden slots with a
fixed instruction (a suite that has an LLM user reads :func:`active_user` when it builds a world;
the travel suite does, tool_suites/travel/llm_user.py). It is part of a run's identity: a folder run
with one user is not resumed with another.

The setting travels as a context variable set around each episode by the runner, so it reaches
worlds without changing the suite interface, and it is per run (two runs in one process do not see
each other's), in worker processes too (each re-enters the runner with the pickled RunConfig).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel, ConfigDict, Field

#: bumped when the LLM user's fixed instruction or the way its reply is read changes
USER_INSTRUCTION_VERSION = 1


class UserSettings(BaseModel):
    """The simulated user of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, description=(
        "None: each suite's deterministic user (the reference). Else a model (a litellm name or "
        "``direct:NAME``, reached with the run's model options) that plays the user."))

    def identity(self) -> dict[str, object]:
        """What of it makes episodes differ (empty for the default user, so older runs keep their ids)."""
        return {} if self.model is None else {"user_model": self.model,
                                              "user_instruction_version": USER_INSTRUCTION_VERSION}


_ACTIVE: contextvars.ContextVar[UserSettings] = contextvars.ContextVar(
    "topoeval_user", default=UserSettings())  # noqa: B039 - UserSettings is frozen
_OPTIONS: contextvars.ContextVar[object | None] = contextvars.ContextVar("topoeval_user_options", default=None)


def active_user() -> UserSettings:
    """The user settings of the episode being run (the default user outside a run)."""
    return _ACTIVE.get()


def active_user_options() -> object | None:
    """The run's ``ModelOptions`` (API base, key, timeouts) for reaching the user model, if set."""
    return _OPTIONS.get()


@contextmanager
def use_user(settings: UserSettings, options: object | None = None) -> Iterator[UserSettings]:
    """Run the enclosed episodes with this user (restored on exit)."""
    token, token_opts = _ACTIVE.set(settings), _OPTIONS.set(options)
    try:
        yield settings
    finally:
        _ACTIVE.reset(token)
        _OPTIONS.reset(token_opts)
