"""BFCL v4's multi-turn categories as a topoeval suite: eight stateful API classes, 128 tools,
200 scenarios in four variants, each a conversation of dependent user turns.

A task is one scenario of one variant. Its opening user turn is the prompt and the others are
``instructions`` (on ``miss_func`` one of them only adds the held-out functions, in BFCL's words);
the tools offered are the involved classes' minus the scenario's excluded and not-yet-added
functions (``withheld_tools``). ``success`` is BFCL's verdict (see :mod:`.world`), ``turn_success``
the share of checked turns that passed.

Splits: BFCL ships one fixed set of scenarios, so the suite partitions it. ``split_mode:
partition`` (default) gives every scenario number one split by a fixed hash — about 50% test,
30% train, 10% dev, 10% fewshot, the same numbers in every variant — so few-shot demos and
exported training tasks never share a scenario with the tests. ``split_mode: benchmark`` makes
the test split all 200 scenarios (BFCL's own evaluation set; the other splits are then empty).
Within a split, the protocol's seed orders the scenarios.
"""

from __future__ import annotations

import hashlib
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from topoeval.core.collateral import CollateralScope
from topoeval.core.messages import AssistantMessage, final
from topoeval.core.fixed_pool import FixedPoolSuite, commit_targets
from topoeval.core.suite import Effect, Instruction, Split, Task, ToolSpec, TopologyDescriptor, World, task_id, task_seed
from topoeval.policies.oracle import next_calls

from . import collateral, data
from .gold import gold_dag
from .world import BfclWorld, commit_object

ClassName = Literal["GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot",
                    "TravelAPI", "VehicleControlAPI"]
N_SCENARIOS = 200
#: split -> the residues of sha256("bfcl-v4:<n>") mod 20 that fall in it (partition mode)
PARTITION = {"test": range(0, 10), "train": range(10, 16), "dev": range(16, 18), "fewshot": range(18, 20)}

SYSTEM_PROMPT = (
    "You are an agent that serves a user through the functions provided. The user gives one request at a "
    "time. For each request, call functions until it is done, then reply in plain text with no function "
    "call: that hands the turn back to the user. If a request cannot be served with the functions you have, "
    "or a needed detail is missing, make no call and say what is missing."
)


class BfclParams(BaseModel):
    """Parameters of the bfcl suite a protocol topology may set."""

    model_config = ConfigDict(extra="forbid")

    variant: Literal["base", "long_context", "miss_func", "miss_param"] = Field(
        default="base", description="BFCL multi-turn category: base, long_context, miss_func or miss_param."
    )
    classes: list[ClassName] = Field(
        default_factory=lambda: list(data.CLASSES), min_length=1,
        description="API classes offered; only scenarios whose involved classes are all among them are drawn.",
    )
    split_mode: Literal["partition", "benchmark"] = Field(
        default="partition",
        description="partition: disjoint splits by scenario; benchmark: the test split is all 200 scenarios.",
    )

    @field_validator("classes")
    @classmethod
    def _unique(cls, classes: list[str]) -> list[str]:
        return sorted(set(classes))


def split_of(number: int) -> str:
    residue = int.from_bytes(hashlib.sha256(f"bfcl-v4:{number}".encode()).digest()[:8], "big") % 20
    return next(s for s, r in PARTITION.items() if residue in r)


@cache
def _split_pool(split: str, mode: str, classes: tuple[str, ...]) -> tuple[int, ...]:
    rows = data.scenarios("base")  # every variant has the same scenario numbers and classes
    pool = []
    for number, row in enumerate(rows):
        if not set(row["involved_classes"]) <= set(classes):
            continue
        if (split == "test") if mode == "benchmark" else split_of(number) == split:
            pool.append(number)
    return tuple(pool)


def reveal_turns(row: dict[str, Any]) -> dict[int, list[str]]:
    """User turn -> held-out functions offered from it on (miss_func).

    A function is offered at its holdout turn, or at the first turn whose ground truth calls it
    if that comes earlier: miss_func_49's ground truth calls ``tail`` in turn 1 although the
    scenario holds it out until turn 3 (BFCL executes any call a model emits, shown or not, so
    there only a model calling a function it was not shown passes). Turn 0 means never withheld.
    """
    first_use: dict[str, int] = {}
    for turn, calls in enumerate(row["ground_truth"]):
        for text in calls:
            first_use.setdefault(text.split("(", 1)[0].strip(), turn)
    out: dict[int, list[str]] = {}
    for key, names in (row.get("missed_function") or {}).items():
        for name in names:
            turn = min(int(key), first_use.get(name, int(key)))
            if turn > 0:
                out.setdefault(turn, []).append(name)
    return out


class BfclSuite(FixedPoolSuite[BfclParams]):
    Params = BfclParams

    def __init__(self, manifest, folder: str | None = None):
        if data.available():
            manifest = manifest.model_copy(update={"tools": list(data.tool_specs())})
        super().__init__(manifest, folder)

    # -- topology -------------------------------------------------------------------------------
    def tools_for(self, params: BfclParams) -> list[ToolSpec]:
        data.require_bfcl()
        return [t for t in data.tool_specs() if data.tool_class(t.name) in params.classes]

    def topology_for(self, params: BfclParams) -> TopologyDescriptor:
        update: dict[str, Any] = {}
        if all(t.effect != Effect.irreversible for t in self.tools_for(params)):
            update["reversibility"] = "all_reversible"
        if params.classes != sorted(data.CLASSES):
            update["schema_name"] = f"{self.manifest.topology.schema_name}:{'+'.join(params.classes)}"
        return self.manifest.topology.model_copy(update=update)

    def system_prompt(self, params: BfclParams) -> str:
        return SYSTEM_PROMPT

    # -- tasks: scenario numbers of a fixed pool, ordered by the seed ---------------------------
    def split_keys(self, params: BfclParams, split: Split) -> tuple[int, ...]:
        data.require_bfcl()
        return _split_pool(split, params.split_mode, tuple(params.classes))

    def pool_note(self, params: BfclParams, split: Split) -> str:
        where = "" if len(params.classes) == len(data.CLASSES) else f", classes {', '.join(params.classes)}"
        return f" (split_mode: {params.split_mode}{where})"

    def pool_task(self, params: BfclParams, split: Split, seed: int, index: int, key: int) -> Task:
        row = data.scenarios(params.variant)[key]
        assert row["id"].endswith(f"_{key}"), row["id"]
        return self._task(params, split, index, seed, key, row)

    def _task(self, params: BfclParams, split: Split, index: int, seed: int, number: int, row: dict[str, Any]) -> Task:
        offered = {t.name: t for t in self.tools_for(params)}
        missed = reveal_turns(row)
        later = {name for names in missed.values() for name in names}
        involved = set(row["involved_classes"])
        withheld = sorted(n for n in offered if data.tool_class(n) not in involved
                          or n in row.get("excluded_function", []) or n in later)
        turns = [" ".join(m["content"] for m in q) if q else data.ADDED_FUNCTIONS_PROMPT for q in row["question"]]
        said = [" ".join(turns[: i + 1]) for i in range(len(turns))]
        task_data = {
            "bfcl_id": row["id"],
            "variant": params.variant,
            "involved_classes": row["involved_classes"],
            "initial_config": row["initial_config"],
            "long_context": params.variant == "long_context",
            "ground_truth": row["ground_truth"],
        }
        classes = {name: data.tool_class(name) or "" for name in offered}
        gold = gold_dag(task_data, offered, classes, said)
        irreversible = sorted(n for n, t in offered.items() if t.effect == Effect.irreversible)
        targets = commit_targets(gold, irreversible, lambda g: commit_object(g.tool, g.arguments))
        s = task_seed(self.name, params, split, seed, number)
        return Task(
            id=task_id(self.name, split, index, s),
            suite=self.name,
            split=split,
            index=index,
            family="+".join(sorted(involved)),
            prompt=turns[0],
            instructions=[Instruction(content=text, tools_added=sorted(missed.get(i, [])))
                          for i, text in enumerate(turns) if i > 0],
            withheld_tools=withheld,
            gold=gold,
            irreversible_tools=irreversible,
            commit_targets=targets,
            data=task_data,
        )

    # -- episodes -------------------------------------------------------------------------------
    def make_world(self, task: Task) -> World:
        data.require_bfcl()
        return BfclWorld(task.data)

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        """success: BFCL's verdict; turn_success: share of the turns with a ground truth that passed;
        abstained: share of the reached turns with an empty ground truth (miss_func / miss_param)
        where the agent made no call (None on tasks without such a turn, or that never reached one)."""
        assert isinstance(world, BfclWorld)
        checked = sum(1 for calls in task.data["ground_truth"] if calls)
        passed = sum(1 for _, ok in world.checks if ok)
        abstained = sum(world.abstentions) / len(world.abstentions) if world.abstentions else None
        return {"success": float(world.passed), "turn_success": passed / checked if checked else None,
                "abstained": abstained}

    def require_extra(self) -> None:
        from .data import require_bfcl

        require_bfcl()

    def collateral_scope(self, task: Task) -> CollateralScope:
        return collateral.scope(task)

    def collateral_entities(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return collateral.entities(snapshot)

    def collateral_call(self, task: Task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        return collateral.collateral_call(task, messages)

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        """The ground truth, turn by turn, independent calls together; then hand the turn back
        (saying what is missing on turns whose ground truth is empty)."""
        step = next_calls(task.gold, messages, self.tools, variant)
        if step is not None:
            return step
        turn = sum(1 for m in messages if m.get("role") == "user") - 1
        truth = task.data["ground_truth"]
        if 0 <= turn < len(truth) and not truth[turn]:
            return final("I cannot do that with the functions and details I have; please tell me what is missing.")
        return final("Done.")
