"""The protocol schema: pydantic models for a protocol YAML file.

Every model rejects unknown keys (``extra="forbid"``). Checks that need the suite registry
(suite names, suite parameters) run in :mod:`topoeval.protocol.loader`, which also maps every
error back to the YAML line it comes from.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    PrivateAttr,
    field_validator,
    model_serializer,
)

#: Metrics a protocol may request; every episode computes all of them anyway.
KNOWN_METRICS = (
    "success",
    "f1",
    "clarification",
    "priority",
    "risk",
    "parallelism",
    "efficiency",
    "dq",
)

#: Largest number of few-shot demonstrations a baseline may ask for.
MAX_SHOTS = 16
#: Largest task count of one split (``tasks.<split>.n``, a topology's ``n_tasks``, ``--tasks``): checked
#: before any task is built, so a typo such as ``n: 1000000000`` is one line, not memory exhaustion.
MAX_TASKS = 100_000
#: Largest number of samples per task (``samples``, ``--samples``; the k of pass@k).
MAX_SAMPLES = 100


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TransformSpec(_Strict):
    """One transform applied to a suite (moves one topology axis)."""

    name: str = Field(description="Transform name, e.g. 'rename_tools'.")
    args: dict[str, Any] = Field(default_factory=dict, description="Transform arguments.")


class TopologySpec(_Strict):
    """A tool topology: a suite, its parameters, and the transforms applied to it."""

    name: str = Field(min_length=1, description="Unique name of this topology within the protocol.")
    suite: str | None = Field(
        default=None,
        description=(
            "Suite name (a folder under tool_suites/, --suites-dir, or an entry point). Required, except on a "
            "ladder step named after a test topology: that step *is* the test topology (evaluated once)."
        ),
    )
    params: dict[str, Any] = Field(default_factory=dict, description="Suite parameters (validated by the suite).")
    transforms: list[TransformSpec] = Field(default_factory=list, description="Transforms, applied in order.")
    #: Folder of the protocol file this topology comes from (relative paths in ``params`` are read
    #: from there: :mod:`topoeval.core.paths`); None for a topology not loaded from a file.
    _folder: str | None = PrivateAttr(default=None)
    role: Literal["id", "ood", "ladder"] | None = Field(
        default=None, description="For test topologies: in distribution, out of distribution, or a ladder step."
    )
    axis: str | None = Field(
        default=None, description="Ladder steps: the axis this step moves (state, user, reversibility, ...)."
    )
    n_tasks: NonNegativeInt | None = Field(
        default=None, le=MAX_TASKS,
        description=f"Override of the protocol's test task count for this topology (at most {MAX_TASKS:,}).",
    )


class SplitSpec(_Strict):
    """How many tasks to draw from one split, and with which seed."""

    n: NonNegativeInt = Field(le=MAX_TASKS, description=f"Number of tasks (at most {MAX_TASKS:,}).")
    seed: int = Field(default=0, description="Seed of the task generator for this split.")


class TaskCounts(_Strict):
    """Task counts and seeds per split."""

    test: SplitSpec = Field(description="Evaluated tasks (drawn from each test topology's test split).")
    fewshot: SplitSpec = Field(
        default_factory=lambda: SplitSpec(n=8, seed=1), description="Pool that few-shot demonstrations come from."
    )
    train: SplitSpec | None = Field(default=None, description="Train split size used by `topoeval export`.")
    dev: SplitSpec | None = Field(default=None, description="Dev split size (for model selection).")


class Baselines(_Strict):
    """Zero- and few-shot baselines: each shot count is its own cell of the summary."""

    shots: list[NonNegativeInt] = Field(default_factory=lambda: [0],
                                        description="Demonstration counts, e.g. [0, 1, 2, 4].")
    demos_from: Literal["target", "source"] = Field(
        default="target", description="Demos from the evaluated topology's fewshot split, or from the train topology's."
    )

    @field_validator("shots")
    @classmethod
    def _shots_valid(cls, shots: list[int]) -> list[int]:
        if not shots:
            raise ValueError("at least one shot count is needed (use [0] for zero-shot)")
        if len(set(shots)) != len(shots):
            raise ValueError(f"duplicate shot counts in {shots}")
        too_many = [s for s in shots if s > MAX_SHOTS]
        if too_many:
            raise ValueError(f"shot count {too_many[0]} is above the maximum of {MAX_SHOTS}")
        return sorted(shots)


class Limits(_Strict):
    """Per-episode limits; hitting one ends the episode (recorded, not an error)."""

    max_turns: PositiveInt = Field(default=12, description="Assistant turns per episode.")
    max_tool_calls: PositiveInt = Field(default=30, description="Tool calls per episode (all turns together).")
    max_tokens: PositiveInt = Field(default=1024, description="Tokens a model may generate per turn.")
    max_turns_per_instruction: PositiveInt | None = Field(
        default=None,
        description="Assistant turns per user instruction of a multi-turn task (None: only the episode's max_turns).",
    )

    @model_serializer(mode="wrap")
    def _unset_cap_left_out(self, handler: Any) -> dict[str, Any]:
        """Leave max_turns_per_instruction out when unset (canonical form: an optional field added with a
        default is absent while unset, so adding it did not change every protocol's hash)."""
        data = handler(self)
        if isinstance(data, dict) and data.get("max_turns_per_instruction") is None:
            data.pop("max_turns_per_instruction", None)
        return data


class Sampling(_Strict):
    """Sampling parameters handed to model backends."""

    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    seed: int | None = Field(default=None, description="Backend sampling seed (sample index is added).")


class Protocol(_Strict):
    """A generalisation protocol: train topology A, test topologies B, baselines, limits."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Protocol name (used in result paths).")
    description: str = Field(default="", description="What the protocol measures.")
    version: PositiveInt = Field(default=1, description="Bumped when the protocol changes meaning.")
    train: TopologySpec = Field(description="The topology the evaluated model was trained on.")
    test: list[TopologySpec] = Field(min_length=1, description="Evaluated topologies, each with a role.")
    tasks: TaskCounts = Field(description="Task counts and seeds per split.")
    baselines: Baselines = Field(default_factory=Baselines, description="Zero-/few-shot baselines.")
    samples: PositiveInt = Field(default=1, le=MAX_SAMPLES,
                                 description=f"Samples per task (k of pass@k; at most {MAX_SAMPLES}).")
    limits: Limits = Field(default_factory=Limits, description="Per-episode limits.")
    sampling: Sampling = Field(default_factory=Sampling, description="Sampling parameters for model backends.")
    metrics: list[str] = Field(default_factory=lambda: ["success"], description="Metrics shown in reports.")
    base_model: str | None = Field(default=None, description="The untrained base model, for transfer vs. base.")
    ladder: list[TopologySpec] = Field(
        default_factory=list,
        description="Ordered steps from the train topology toward the OOD one, each moving one axis (role: ladder).",
    )

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, metrics: list[str]) -> list[str]:
        for m in metrics:
            if m not in KNOWN_METRICS:
                raise ValueError(f"unknown metric '{m}' (known: {', '.join(KNOWN_METRICS)})")
        return metrics

    def topologies(self) -> list[TopologySpec]:
        """Every evaluated topology: the test topologies, then the ladder steps in order (a step that
        names a test topology is that topology, not a second copy)."""
        return list(self.test) + [t.model_copy(update={"role": "ladder"}) for t in self.ladder if t.suite is not None]
