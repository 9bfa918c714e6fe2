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
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
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
    "collateral",
)

#: Largest number of few-shot demonstrations a baseline may ask for.
MAX_SHOTS = 16
#: Largest task count of one split (``tasks.<split>.n``, a topology's ``n_tasks``, ``--tasks``): checked
#: before any task is built, so a typo such as ``n: 1000000000`` is one line, not memory exhaustion.
MAX_TASKS = 100_000
#: Largest number of samples per task (``samples``, ``--samples``; the k of pass@k).
MAX_SAMPLES = 100
#: The axes a topology is compared on (DESIGN §1, plus the tool-call format); a designed matrix's move names one.
AXES = ("state", "reversibility", "user", "ordering", "dependency", "schema", "answer_channel", "instructions",
        "format")
#: How a designed matrix combines its moves (:mod:`topoeval.protocol.design`).
PLANS = ("star", "pairs", "factorial", "half_factorial")
#: Most moves one design may declare, and most topologies one design may generate (a factorial of 12 moves
#: would be 4,096: a star or pairs is the plan for many moves).
MAX_MOVES = 12
MAX_DESIGN_TOPOLOGIES = 256


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
    #: A topology a designed matrix generated: its base topology's name and the moves applied to it, in order
    #: (None: declared as it is). Not part of the canonical form (the topology is).
    _moves: tuple[str, tuple[str, ...]] | None = PrivateAttr(default=None)
    #: Where in the YAML a generated topology comes from (``matrix.design[i]...``), for error lines.
    _origin: tuple[str | int, ...] | None = PrivateAttr(default=None)


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
    seed: int | None = Field(default=None, description=(
        "Backend sampling seed; each turn is sent its own, derived from it, the task, the sample and the turn "
        "(SamplingParams.for_turn). None: the backend's own randomness."))


class MoveSpec(_Strict):
    """One move of a designed matrix: what changes the base topology along one axis."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description=(
        "Short name of the move; a generated topology is named base+move(+move...), e.g. travel+merged."))
    axis: Literal[AXES] = Field(description="The topology axis this move changes (its loss is attributed there).")  # type: ignore[valid-type]
    transforms: list[TransformSpec] = Field(default_factory=list, description=(
        "Transforms the move adds after the base topology's (and after the moves declared before it)."))
    params: dict[str, Any] = Field(default_factory=dict, description=(
        "Suite parameters the move sets on top of the base topology's (validated by the suite)."))

    @model_validator(mode="after")
    def _moves_something(self) -> MoveSpec:
        if not self.transforms and not self.params:
            raise ValueError(f"move '{self.name}' changes nothing: give it transforms or params")
        return self


class DesignSpec(_Strict):
    """A designed matrix around one base topology: the topologies its moves generate (docs/transfer-matrix.md).

    ``plan`` says which combinations of moves are run: ``star`` (the base and each move alone: main effects
    only), ``pairs`` (the star plus pairs of moves: their interactions), ``factorial`` (every combination) or
    ``half_factorial`` (the combinations of an even number of moves: half the runs, main effects aliased with
    interactions of the other moves, which the attribution reports as confounded where they are).
    """

    base: TopologySpec = Field(description="The base topology (suite, params, transforms, n_tasks; no role or axis).")
    moves: list[MoveSpec] = Field(min_length=1, max_length=MAX_MOVES, description=(
        f"The moves, each along one axis (1 to {MAX_MOVES})."))
    plan: Literal[PLANS] = Field(default="star", description=(  # type: ignore[valid-type]
        "Which combinations of moves are run: star, pairs, factorial or half_factorial."))
    pairs: list[list[str]] | None = Field(default=None, description=(
        "plan: pairs only: the pairs of moves (by name) run together; default every pair."))


class MatrixSpec(_Strict):
    """A transfer matrix: every evaluated model on every one of these topologies (docs/transfer-matrix.md).

    Each topology is declared as a test topology is (suite, params, transforms, n_tasks), without a
    role or an axis: which one is a model's own (the diagonal) comes from the model (its adapter's
    training record, or ``--trained-on MODEL=TOPOLOGY``), not from the protocol. A ``design`` adds the
    topologies its moves generate around a base (:mod:`topoeval.protocol.design`); they follow the declared
    ones, and the canonical form holds them as topologies (the design itself is not part of it).
    """

    design: list[DesignSpec] = Field(default_factory=list, description=(
        "Designed matrices: each generates topologies around its base by its moves (star, pairs, factorial)."))
    topologies: list[TopologySpec] = Field(default_factory=list, description=(
        "The topologies every model is evaluated on (rows x these columns); with a design, any besides its own."))

    @field_validator("topologies")
    @classmethod
    def _two_without_a_design(cls, topologies: list[TopologySpec], info: ValidationInfo) -> list[TopologySpec]:
        if not info.data.get("design") and len(topologies) < 2:  # a design generates two at least
            raise ValueError(f"List should have at least 2 items, not {len(topologies)} (a matrix of one topology "
                             "has no off-diagonal): list them, or declare a design")
        return topologies

    @model_validator(mode="after")
    def _expanded(self) -> MatrixSpec:
        """The design's topologies appended (generated once: a dump holds them as topologies, not the design)."""
        if self.design:
            from topoeval.protocol.design import combos, generate_topologies

            for design in self.design:
                if len(combos(design)) > MAX_DESIGN_TOPOLOGIES:
                    raise ValueError(f"the design around '{design.base.name}' would generate {len(combos(design))} "
                                     f"topologies (at most {MAX_DESIGN_TOPOLOGIES}): use plan star or pairs")

            self.topologies = [*self.topologies, *generate_topologies(self.design)]
        return self

    @model_serializer(mode="wrap")
    def _design_left_out(self, handler: Any) -> dict[str, Any]:
        """The canonical form: the topologies (generated ones included), without the design that made them."""
        data = handler(self)
        if isinstance(data, dict):
            data.pop("design", None)
        return data


#: the role of every topology of a matrix protocol in the cells and episodes (no ID/OOD: that is per model)
MATRIX_ROLE = "matrix"


class Protocol(_Strict):
    """A generalisation protocol: train topology A, test topologies B, baselines, limits; or a
    transfer matrix (``matrix``: every model on every listed topology) instead of train and test."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Protocol name (used in result paths).")
    description: str = Field(default="", description="What the protocol measures.")
    version: PositiveInt = Field(default=1, description="Bumped when the protocol changes meaning.")
    train: TopologySpec | None = Field(default=None, description=(
        "The topology the evaluated model was trained on (required unless the protocol is a ``matrix``)."))
    test: list[TopologySpec] = Field(default_factory=list, description=(
        "Evaluated topologies, each with a role (required unless the protocol is a ``matrix``)."))
    matrix: MatrixSpec | None = Field(default=None, description=(
        "Instead of train and test: topologies every model is evaluated on, the transfer matrix."))
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

    @model_validator(mode="after")
    def _one_shape(self) -> Protocol:
        """A one-way protocol (train and test) or a matrix, not both (the loader names the fields first)."""
        if self.matrix is None and (self.train is None or not self.test):
            raise ValueError("a protocol needs train and test (one-way), or matrix (every model on every topology)")
        if self.matrix is not None and (self.train is not None or self.test or self.ladder):
            raise ValueError("a matrix protocol lists its topologies under matrix.topologies: no train, test or ladder")
        return self

    @model_serializer(mode="wrap")
    def _unset_matrix_left_out(self, handler: Any) -> dict[str, Any]:
        """Leave ``matrix`` out of a one-way protocol, and train/test/ladder out of a matrix (the canonical
        form: adding the matrix field did not change any one-way protocol's hash)."""
        data = handler(self)
        if isinstance(data, dict):
            if data.get("matrix") is None:
                data.pop("matrix", None)
            else:
                for key in ("train", "test", "ladder"):
                    data.pop(key, None)
        return data

    def train_topology(self) -> TopologySpec:
        """The train topology; a one-line UserError for a matrix protocol, which has none."""
        if self.train is None:
            from topoeval.core.errors import UserError

            names = ", ".join(t.name for t in self.matrix.topologies) if self.matrix else ""
            raise UserError(f"protocol '{self.name}' is a transfer matrix: it has no train topology (name one of its "
                            f"topologies: {names})")
        return self.train

    @property
    def is_matrix(self) -> bool:
        """Whether this is a transfer-matrix protocol (``matrix``) rather than a one-way one."""
        return self.matrix is not None

    def topologies(self) -> list[TopologySpec]:
        """Every evaluated topology: the test topologies, then the ladder steps in order (a step that
        names a test topology is that topology, not a second copy); for a matrix, its topologies, each
        with the role ``matrix``."""
        if self.matrix is not None:
            return [t.model_copy(update={"role": MATRIX_ROLE}) for t in self.matrix.topologies]
        return list(self.test) + [t.model_copy(update={"role": "ladder"}) for t in self.ladder if t.suite is not None]

    def declared_topologies(self) -> list[TopologySpec]:
        """Every topology the file declares (train, test, ladder steps with a suite; or the matrix's)."""
        if self.matrix is not None:
            return list(self.matrix.topologies)
        train = [self.train] if self.train is not None else []
        return [*train, *self.test, *(t for t in self.ladder if t.suite is not None)]
