"""The policy interface every model backend implements."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from topoeval.core.messages import AssistantMessage

if TYPE_CHECKING:
    from topoeval.core.suite import Suite, Task


class SamplingParams(BaseModel):
    """What a backend needs to sample one turn."""

    temperature: float = Field(default=0.0, description="Sampling temperature.")
    top_p: float = Field(default=1.0, description="Nucleus sampling mass.")
    max_tokens: int = Field(default=1024, description="Tokens the model may generate this turn.")
    seed: int | None = Field(default=None, description=(
        "Backend seed. A run's episodes send each turn its own, from the protocol's seed, the task, the "
        "sample index and the turn (:meth:`for_turn`); None: the backend's own randomness."))

    def for_turn(self, task_id: str, sample: int, turn: int) -> SamplingParams:
        """These parameters with the seed of one turn of one sample of one task (unchanged without a seed).

        A backend re-seeds its generator on every request, so one seed for every request of a sample
        would draw the same random numbers on every turn of every task: a sample whose sequence happens
        to start with a rare draw would leave the greedy path on the same token of every conversation,
        and the others never, so samples would differ from each other in a way tasks share. A seed per
        (task, sample, turn) keeps samples independent while a rerun still draws the same."""
        if self.seed is None:
            return self
        digest = hashlib.blake2b(f"{self.seed}|{task_id}|{sample}|{turn}".encode(), digest_size=8).digest()
        return self.model_copy(update={"seed": int.from_bytes(digest, "big") % 2**31})


@dataclass
class EpisodeContext:
    """What the runner knows about the episode; only reference policies may look at the task."""

    task: Task
    suite: Suite
    sample: int
    shots: int
    #: the episode's key in its run (model|baseline|topology|task|sample); "" outside a run.
    #: Backends with several replicas pin an episode to one by it.
    key: str = ""


class ContextLimitError(Exception):
    """The conversation no longer fits the model's context window. The episode ends at a limit
    (``limit:context_window``), scored like any other limit: the model's outcome, not an error."""


#: How a content-policy refusal reads as the model's answer (the provider's words follow).
REFUSAL_PREFIX = "[refused by the provider's content policy] "


class RefusalError(Exception):
    """The provider's content policy blocked the request or its reply (an HTTP 400 that says so).
    It is the model's refusal: the runner takes it as the model's answer to the turn
    (``REFUSAL_PREFIX`` + the provider's words), scored like any other answer, never an error."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        #: the provider's own words
        self.detail = detail


class Policy(ABC):
    """Maps (messages, tools, sampling params) to one assistant message.

    Several tool calls in one message form a parallel turn. Implementations must not raise
    for malformed model output (return it; the runner records it); they may raise for
    backend failures, which the runner records as episode errors (infrastructure: excluded from
    the scores and retried by the next run), or :class:`ContextLimitError`.
    """

    #: Display name used in results (e.g. 'oracle', 'openai/gpt-4o-mini').
    name: str = "policy"
    #: Default bound on concurrent episodes for this backend (``--concurrency`` overrides it).
    concurrency: int = 8
    #: A hard cap on episodes in flight that no ``--concurrency`` raises, None for none: a local model's
    #: slots, each episode pinned to one for its whole length (more episodes than slots would interleave
    #: on a slot and recompute every prompt). See :func:`episodes_in_flight`.
    max_in_flight: int | None = None
    #: A fingerprint of weights that can change under the same name (a retrained LoRA adapter's
    #: sha256); None when the name alone fixes the model. Response caches key on it, and a run
    #: folder refuses to resume a model whose fingerprint changed.
    weights: str | None = None
    #: What decoding ran on, where it matters for reproducing outputs (a local llama.cpp server's
    #: build, CPU features and batching); None for remote and reference backends. run.json records it.
    inference: dict | None = None

    @abstractmethod
    async def act(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        sampling: SamplingParams,
        ctx: EpisodeContext,
    ) -> AssistantMessage:
        """The next assistant message."""

    async def preflight(self) -> str | None:
        """Check, before any episode, that the backend can answer at all (one cheap request).

        Raises :class:`topoeval.core.errors.UserError` for what retrying cannot fix (rejected
        credentials, unknown model); returns a warning line for a failure that may pass, else None.
        Policies without a remote backend have nothing to check.
        """
        return None

    async def aclose(self) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """Release backend resources (servers, sessions)."""


def episodes_in_flight(policy: Policy, concurrency: int | None = None) -> int:
    """How many of ``policy``'s episodes run at once: ``concurrency`` (``--concurrency``) or the
    backend's default, never more than its hard cap (:attr:`Policy.max_in_flight`)."""
    wanted = concurrency or policy.concurrency
    cap = policy.max_in_flight
    return max(1, min(wanted, cap) if cap else wanted)
