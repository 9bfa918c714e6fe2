"""The suite contract: what a tool world must declare and implement.

A *suite* is a folder with a ``suite.yaml`` manifest (tool specs in OpenAI function-calling
JSON schema, each annotated with its effect, plus a topology descriptor over the axes of
DESIGN §1) and a Python module holding a :class:`Suite` subclass. The runner only ever talks
to a suite through this module, so a suite written outside the repository works the same
as a shipped one.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterator
from enum import Enum
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from topoeval.core.collateral import CollateralScope, entities_at_depth
from topoeval.core.messages import AssistantMessage

SPLITS = ("train", "dev", "test", "fewshot")
Split = Literal["train", "dev", "test", "fewshot"]


class Effect(str, Enum):
    """What a tool does to the world."""

    read = "read"
    write = "write"
    irreversible = "irreversible"


class ToolSpec(BaseModel):
    """One tool of a suite: its OpenAI function schema plus topoeval's annotations."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Function name the model calls.")
    description: str = Field(description="Text shown to the model.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON schema (OpenAI function-calling) of the arguments.",
    )
    effect: Effect = Field(description="read | write | irreversible.")
    idempotent: bool = Field(description="Calling twice with the same arguments changes nothing more.")
    parallel_safe: bool = Field(description="May run in the same turn as other calls.")
    needs_confirmation: bool = Field(
        default=False, description="The user must confirm these exact arguments before the call."
    )
    user_channel: bool = Field(
        default=False, description="This tool talks to the simulated user (ask_user) rather than the world."
    )

    def openai(self) -> dict[str, Any]:
        """The tool as an OpenAI ``tools`` entry (annotations stripped)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class TopologyDescriptor(BaseModel):
    """Where a suite sits on each axis of DESIGN §1."""

    model_config = ConfigDict(extra="forbid")

    state: Literal["stateless", "stateful"] = Field(description="Whether calls change the world.")
    reversibility: Literal["all_reversible", "some_irreversible"] = Field(
        description="Whether some action cannot be undone."
    )
    user: Literal["none", "hidden_slots"] = Field(description="Whether some task facts are known only to the user.")
    ordering: Literal["flat", "partial_order"] = Field(description="Flat constraints or prioritised ones.")
    dependency: Literal["independent", "serial", "mixed"] = Field(
        description="Shape of the gold call DAGs: parallel lookups, serial chains, or both."
    )
    schema_name: str = Field(description="Label of the tool vocabulary (changes when tools are renamed).")
    answer_channel: Literal["text", "state"] = Field(description="Answer in text, or a change of world state.")
    distractor_tools: int = Field(default=0, description="Tools present that no task needs.")
    calls_per_turn: int | None = Field(
        default=None, ge=1, description="Most tool calls one turn may carry (None: any number; no_batch sets 1)."
    )
    instructions: Literal["single", "sequential"] = Field(
        default="single",
        description="One user instruction per task, or a conversation of dependent instructions sent one at a time.",
    )


class SuiteManifest(BaseModel):
    """The parsed ``suite.yaml`` of a suite folder."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Suite name used in protocols.")
    description: str = Field(description="One paragraph for `topoeval suites`.")
    version: int = Field(default=1, description="Bumped when generated tasks change.")
    suite: str = Field(
        validation_alias=AliasChoices("suite", "world"),
        description="'module.py:ClassName' of the Suite subclass, relative to the folder ('world:' is read as "
        "the same key: the name manifests used before).",
    )
    tools: list[ToolSpec] = Field(description="Tool specs offered to the model.")
    topology: TopologyDescriptor = Field(description="Position on the topology axes.")


class GoldCall(BaseModel):
    """One node of a task's gold dependency DAG: a call the task requires."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Node id, unique within the task.")
    tool: str = Field(description="Tool name.")
    arguments: dict[str, Any] = Field(description="Arguments that identify the call (compared normalised).")
    depends_on: list[str] = Field(default_factory=list, description="Ids of nodes whose observations feed this call.")
    instruction: int = Field(
        default=0, ge=0,
        description="Index of the user instruction that asks for this call (0: the prompt); it cannot come earlier.",
    )
    match: Literal["args", "tool", "ask", "confirm"] = Field(
        default="args",
        description=(
            "How an agent's call is matched to this node: 'args' (same tool, gold arguments equal after "
            "normalisation), 'tool' (same tool; arguments unknowable in advance, e.g. a hold id), 'ask' "
            "(a user question about a hidden slot), 'confirm' (a user confirmation)."
        ),
    )


class Instruction(BaseModel):
    """A later user turn of a multi-turn task."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(description="The user's message.")
    tools_added: list[str] = Field(
        default_factory=list, description="Withheld tools offered from this instruction on (e.g. BFCL miss_func)."
    )


class Task(BaseModel):
    """One generated task with its ground truth."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable id: '<suite>/<split>/<index>-<hash8>'.")
    suite: str = Field(description="Suite name.")
    split: Split = Field(description="train | dev | test | fewshot.")
    index: int = Field(description="Index within the split.")
    family: str = Field(description="Task family / question type (for per-family breakdowns).")
    prompt: str = Field(description="The user's opening message.")
    instructions: list[Instruction] = Field(
        default_factory=list,
        description=(
            "Later user instructions, sent one at a time: the next one each time the agent hands the turn "
            "back (an assistant message without tool calls), the world carried over. Empty: one instruction."
        ),
    )
    withheld_tools: list[str] = Field(
        default_factory=list,
        description="Suite tools not offered when the episode starts (an instruction's tools_added offers some later).",
    )
    answer: str | None = Field(default=None, description="Gold text answer for answer-channel tasks.")
    answer_aliases: list[str] = Field(default_factory=list, description="Other accepted answers.")
    expected_state: dict[str, Any] | None = Field(
        default=None, description="Expected world-state diff for state-channel tasks."
    )
    allow_list: list[str] = Field(
        default_factory=list, description="State keys that may change (anything else changing fails)."
    )
    given_slots: dict[str, Any] = Field(default_factory=dict, description="Slots stated in the prompt.")
    hidden_slots: dict[str, Any] = Field(default_factory=dict, description="Slots only the user knows.")
    priority: list[str] = Field(default_factory=list, description="Constraint priority order, highest first.")
    trade_off: bool = Field(default=False, description="No option satisfies every constraint.")
    gold: list[GoldCall] = Field(default_factory=list, description="Gold dependency DAG of required calls.")
    irreversible_tools: list[str] = Field(default_factory=list, description="Tools whose calls cannot be undone.")
    commit_targets: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Per irreversible tool, the objects it may validly act on for this task's goal (risk metric).",
    )
    options: dict[str, dict[str, bool]] = Field(
        default_factory=dict,
        description="Committable options and which constraints each satisfies (priority metric on trade-offs).",
    )
    data: dict[str, Any] = Field(default_factory=dict, description="Suite-specific world specification.")

    def user_turns(self) -> list[str]:
        """Every user instruction in order: the prompt, then the later ones."""
        return [self.prompt, *(i.content for i in self.instructions)]

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of the task (feeds the task-set hash).

        Canonical form: the multi-turn fields are left out while they hold their defaults. This is the
        rule for fields added with a default (a single-instruction task hashes the same whether or not
        the schema knows multi-turn tasks), so adding an optional field does not change every task-set
        hash that results, adapters and papers cite.
        """
        dump = self.model_dump(mode="json")
        for key in ("instructions", "withheld_tools"):
            if not dump[key]:
                del dump[key]
        for node in dump["gold"]:
            if node["instruction"] == 0:
                del node["instruction"]
        return hashlib.sha256(canonical_json(dump).encode()).hexdigest()


class ToolError(Exception):
    """Raised by a world for a call it cannot carry out; becomes an error observation."""


class WorldError(Exception):
    """Raised by a world whose backend failed — a server that does not start, dies, or does not
    answer in time — from ``make_world`` or ``call``. The episode ends with status ``error``
    (infrastructure, not the model's doing); it is recorded, never raised out of the runner."""


class World(ABC):
    """The live state of one episode.

    ``events`` records what the metrics need, appended by the world as calls happen (the runner
    tags each with the index of the call and turn that caused it):

    - ``{"type": "ask", "slots": [...]}`` — a user question and the slots it was about;
    - ``{"type": "confirm", "object": X, "answer": "yes" | "no"}`` — a confirmation request;
    - ``{"type": "commit", "tool": T, "object": X, "irreversible": bool}`` — a committing call
      (booking, payment, cancellation) that took effect; ``irreversible`` (default true) says
      whether it can be undone. Risk judges only irreversible commits; priority judges the last
      commit of either kind.

    The runner adds ``{"type": "instruction", "index": i, "turn": t}`` when it sends instruction
    ``i`` (> 0) of a multi-turn task before assistant turn ``t``.
    """

    #: Records of interactions the metrics need (see the class docstring).
    events: list[dict[str, Any]]

    @abstractmethod
    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Execute one validated call and return its observation (JSON-serialisable).

        Raise :class:`ToolError` for calls the world refuses (unknown ids, ...).
        """

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """JSON-serialisable state, used for diffs and invariants."""

    def end_instruction(self, index: int) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """The agent handed user instruction ``index`` back (0: the prompt). Worlds that score each
        instruction (BFCL) check it here; the default does nothing."""

    def close(self) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """Release what the world holds (a server process, a scratch folder). The runner calls it
        once the episode's record is made, however the episode ended; it must be idempotent."""


ParamsT = TypeVar("ParamsT", bound=BaseModel)


class Suite(ABC, Generic[ParamsT]):
    """A tool world: manifest, task generator, world factory, scorer and oracle.

    Generic over its parameters model: ``class MySuite(Suite[MyParams])`` with ``Params = MyParams``,
    and every method taking ``params`` receives a ``MyParams`` (``parse_params`` built it), so a suite
    never checks its type. Tools and topology have one source each: :meth:`tools_for` and
    :meth:`topology_for` (the parameter-free :attr:`tools` and ``manifest.topology`` are those of the
    default parameters, for listings and for transforms that rename before parameters are known).
    """

    #: pydantic model of the suite parameters a protocol topology may set (the ``ParamsT`` above).
    Params: ClassVar[type[BaseModel]]

    def __init__(self, manifest: SuiteManifest, folder: str | None = None):
        self.manifest = manifest
        self.folder = folder

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def tools(self) -> list[ToolSpec]:
        return self.manifest.tools

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    def parse_params(self, params: dict[str, Any] | None) -> ParamsT:
        return cast(ParamsT, self.Params.model_validate(params or {}))

    def task_problems(self, params: ParamsT) -> list[str]:
        """Mistakes in the suite's own task data under these parameters, one line each (a gold call
        naming a tool the topology does not offer, ...). ``topoeval validate`` and every protocol
        load report them as protocol errors. Default: none (generated tasks are checked by tests)."""
        return []

    def tools_for(self, params: ParamsT) -> list[ToolSpec]:
        """Tools offered under these parameters (default: the manifest's). A suite whose tool list
        depends on its parameters overrides this; the runner sees the result through
        :func:`topoeval.protocol.topology.resolve`."""
        return self.manifest.tools

    def topology_for(self, params: ParamsT) -> TopologyDescriptor:
        """Position on the topology axes under these parameters (default: the manifest's)."""
        return self.manifest.topology

    def expand_calls(self, calls: list[dict[str, Any]], events: list[dict[str, Any]]):
        """(calls, events) as the metrics should read them (default: unchanged). A suite whose one
        call stands for several — ``batch_api`` — returns the component calls, events re-indexed."""
        return calls, events

    def system_prompt(self, params: ParamsT) -> str:
        """System message for this suite (short: it is paid on every call)."""
        return (
            "You are an agent that solves the user's task with the tools provided. "
            "Call tools when you need information or to act; several independent calls may go in one turn. "
            "When you are done, reply with your final answer and no tool call."
        )

    @abstractmethod
    def generate(self, params: ParamsT, split: Split, seed: int, index: int) -> Task:
        """The task at ``index`` of ``split``; a pure function of its arguments."""

    def tasks(self, params: ParamsT, split: Split, seed: int, n: int) -> list[Task]:
        return [self.generate(params, split, seed, i) for i in range(n)]

    def iter_tasks(self, params: ParamsT, split: Split, seed: int, n: int) -> Iterator[Task]:
        """The same tasks as :meth:`tasks`, one at a time (a run of 100,000 tasks never holds them all).
        Overridden where making one task repeats work the whole set shares (a fixed pool's order)."""
        for i in range(n):
            yield self.generate(params, split, seed, i)

    def pool_size(self, params: ParamsT, split: Split) -> int | None:
        """How many distinct tasks ``split`` holds under these parameters: None (the default) for a
        generator, which draws as many as asked. A suite bridged from a fixed task set (AgentDojo)
        returns its split's size, and a protocol asking for more is rejected when it loads."""
        return None

    @abstractmethod
    def make_world(self, task: Task) -> World:
        """A fresh world for one episode of ``task``."""

    @abstractmethod
    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        """Outcome scores: at least ``success`` in {0, 1}; answer suites also ``f1``."""

    @abstractmethod
    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        """The next message of a reference policy that knows the ground truth."""

    def rationale(self, task: Task, messages: list[dict[str, Any]], calls: list[dict[str, Any]]) -> str | None:
        """One line of reasoning a reference policy could write before ``calls`` (OpenAI ``tool_calls``)
        after ``messages``, or None (the default: none). SFT data made with ``rationale=True``
        (:mod:`topoeval.training.sft_data`) puts it in the assistant turn's text, before its calls, so
        a small model learns to state what a choice rests on before it makes it. A suite writes it
        from what the conversation has shown, never from what it has not."""
        return None

    def behaviour_version(self) -> str | None:
        """A version of the suite's code that decides episodes beyond its tasks' data (a simulated user's
        reading of questions, say), or None. Part of the identity of every run over the suite: a run folder
        made under another version is not resumed, so no run mixes episodes of two versions. Bump it with
        any change there. Default None (nothing beyond the task data, and run ids stay as they were)."""
        return None

    def require_extra(self) -> None:
        """Raise :class:`~topoeval.core.errors.UserError` with the one-line install hint where an optional
        extra the suite needs is missing here (default: nothing to check)."""

    def unavailable(self) -> str | None:
        """Why the suite cannot run in this environment (:meth:`require_extra`'s line), else None. A transfer
        matrix skips such a suite's columns with that line."""
        from topoeval.core.errors import UserError

        try:
            self.require_extra()
        except UserError as exc:
            return str(exc)
        return None

    def run_problems(self, params: ParamsT, user_model: str | None) -> list[str]:
        """What a topology with these parameters needs of a run and does not get (a model to play the user,
        say), one line each, checked before the run's first world is built. Default: nothing."""
        return []

    def ends_episode(self, task: Task, tool: str) -> bool:
        """Whether a call of ``tool`` closes ``task``'s episode, the world taking no call after it (τ² solo
        mode's ``done``); a reference policy that adds calls makes them before it. Default False."""
        return False

    def collateral_scope(self, task: Task) -> CollateralScope | None:
        """What ``task`` may change (:class:`topoeval.core.collateral.CollateralScope`), or None where
        collateral damage is not defined (the default: a stateless world, or one whose state cannot be
        read). Called once per episode record; cache what is costly."""
        return None

    def collateral_entities(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        """The entities of a snapshot, name -> value (default: the paths two levels deep). A suite whose
        snapshot nests its entities deeper (``db.<table>.<id>``) or flatter says so here."""
        return entities_at_depth(snapshot, 2)

    def collateral_call(self, task: Task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        """The next call of ``oracle-collateral``'s damage — an irreversible write on an entity outside
        ``task``'s scope (another customer's line, another reservation) — given the episode's messages
        so far, or None once it is made (or where the suite has no such entity: the policy then plays
        the oracle). Most suites need one call; one that must hold before it pays returns each in turn.
        """
        return None


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces) for hashing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def task_seed(suite: str, params: BaseModel, split: str, seed: int, index: int) -> int:
    """Integer seed of one task, derived from everything that identifies it.

    The split name is part of the hash, so the four splits draw from disjoint seed streams.
    """
    key = canonical_json([suite, params.model_dump(mode="json"), split, seed, index])
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


def task_id(suite: str, split: str, index: int, seed_value: int) -> str:
    return f"{suite}/{split}/{index}-{seed_value & 0xFFFFFFFF:08x}"
