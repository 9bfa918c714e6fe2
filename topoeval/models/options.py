"""Options that apply to every model backend (from the CLI or the Python API)."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator

from topoeval.core.choices import ToolMode  # noqa: F401  (re-exported: the enum of tool_mode)
from topoeval.core.errors import UserError
from topoeval.core.replies import ReplyLimits
from topoeval.models.replicas import split_urls

#: The environment variable that sets the local models' CPU threads when n_threads is not given (a
#: machine shared with other work: ``make test`` sets 1 for its llama-servers beside a second worker).
THREADS_ENV = "TOPOEVAL_LOCAL_THREADS"


def threads_from_env() -> int | None:
    """``$TOPOEVAL_LOCAL_THREADS`` as a thread count; None (all cores) when unset or empty."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise UserError(f"${THREADS_ENV}={value!r}: give a number of threads (1 or more), or unset it for all cores")
    return int(value)


#: The environment variable that turns the local models' saved prefix states off ("0") when
#: local_prefix_states is not given (the from-scratch path, for comparing with numbers made before them).
PREFIX_STATES_ENV = "TOPOEVAL_LOCAL_PREFIX_STATES"


def prefix_states_from_env() -> bool:
    """``$TOPOEVAL_LOCAL_PREFIX_STATES`` as a switch: on unless it is "0" (unset or empty: on)."""
    value = os.environ.get(PREFIX_STATES_ENV, "").strip()
    if value not in ("", "0", "1"):
        raise UserError(f"${PREFIX_STATES_ENV}={value!r}: give 1 (saved prefix states, the default) or 0 "
                        "(each episode's first request from scratch)")
    return value != "0"


class ModelOptions(BaseModel):
    """How to reach and drive a model; one instance serves every ``--model`` of a run."""

    api_base: str | None = Field(default=None, description=(
        "Base URL of an OpenAI-compatible server; several replicas of it comma-separated (see api_bases)."))
    api_bases: list[str] = Field(default_factory=list, description=(
        "Every replica's base URL (--api-base given more than once). Filled from api_base, whose value "
        "becomes the first; the direct path pins each episode to one replica, litellm routes over them."))
    api_key: str | None = Field(default=None, description="API key (else the provider's usual env variable).")
    tool_mode: Literal["auto", "native", "prompt"] = Field(
        default="auto", description="native function calling, tools in the prompt, or auto (by capability)."
    )
    tool_format: str | None = Field(default=None, description=(
        "Tool-call format the model is addressed in (native, hermes, search-r1, react, json, or a plug-in's; "
        "see topoeval.formats); None: the backend's own, as tool_mode picks it. A model spec's @FORMAT suffix sets it "
        "per model. A format other than the backend's default is part of the model's name (MODEL@FORMAT)."))
    timeout_s: float = Field(default=120.0, gt=0, description="Per-request timeout.")
    max_retries: int = Field(default=6, ge=0, description="Retries of transient failures (429, 5xx, timeouts).")
    max_backoff_s: float = Field(default=60.0, gt=0, description="Longest wait between retries.")
    n_ctx: int = Field(default=8192,
                       description="Context window for local llama.cpp models (SmolLM2 was trained on 8192).")
    n_threads: int | None = Field(default_factory=threads_from_env, description=(
        "CPU threads for local models (default: $TOPOEVAL_LOCAL_THREADS, else all cores); run.json's "
        "inference fingerprint records it."))
    local_slots: int | None = Field(default=None, ge=1, description=(
        "Slots per model on its local llama-server: sequences decoded together (continuous batching; default 1). "
        "It is the model's default concurrency too, and run.json's inference fingerprint records it."))
    local_prefix_states: bool = Field(default_factory=prefix_states_from_env, description=(
        "Local llama-server models: restore a saved state of the prefix an episode shares with its cell (system "
        "prompt, tools, demonstrations) before its first request, instead of computing that request from scratch "
        "(default on; $TOPOEVAL_LOCAL_PREFIX_STATES=0 turns it off). Either way an episode depends on itself "
        "alone; the two paths' greedy tokens differ, and run.json's inference fingerprint records which ran."))

    reply_limits: ReplyLimits = Field(default_factory=ReplyLimits, description=(
        "What one reply may hold (topoeval.core.replies): its text, tool names, argument nesting and response "
        "bytes. A run sets it from RunConfig.reply_limits; set it here for a backend used on its own."))

    #: The fields that change what a model is sent or how its reply is read (not only how it is reached):
    #: part of a run's identity and of its response-cache key (:mod:`topoeval.runner.config`). A new
    #: episode-changing option is added here too.
    EPISODE_FIELDS: ClassVar[tuple[str, ...]] = ("tool_mode", "n_ctx")

    def episode_settings(self) -> dict[str, Any]:
        """The values of :attr:`EPISODE_FIELDS` (the run identity's share of these options)."""
        return {name: getattr(self, name) for name in self.EPISODE_FIELDS}

    @model_validator(mode="after")
    def _replicas(self) -> ModelOptions:
        urls = split_urls([*([self.api_base] if self.api_base else []), *self.api_bases])
        self.api_bases = urls
        self.api_base = urls[0] if urls else None
        return self
