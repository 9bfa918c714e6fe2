"""The shared pieces of the bridged suites: the fixed-pool base, topology derivation, commit
targets, the annotation model and the one annotation-file loader."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from topoeval.core.annotations import ToolAnnotation, load_model_file
from topoeval.core.errors import UserError
from topoeval.core.fixed_pool import FixedPoolSuite, commit_targets, derive_topology
from topoeval.core.messages import final
from topoeval.core.suite import Effect, GoldCall, SuiteManifest, Task, ToolSpec, TopologyDescriptor, task_id

POOL = {"test": ["a", "b", "c", "d", "e"], "fewshot": ["f", "g"]}


class PoolParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str = "x"


class PoolSuite(FixedPoolSuite[PoolParams]):
    Params = PoolParams

    def split_keys(self, params: PoolParams, split):
        return POOL.get(split, [])

    def pool_task(self, params: PoolParams, split, seed, index, key) -> Task:
        assert isinstance(params, PoolParams)  # the typed contract hands the parsed model through
        return Task(id=task_id(self.name, split, index, ord(key)), suite=self.name, split=split, index=index,
                    family="f", prompt=f"task {key} ({params.note})", answer=key)

    def make_world(self, task):  # pragma: no cover - not played here
        raise NotImplementedError

    def score(self, task, final_answer, world):  # pragma: no cover
        return {"success": 0.0}

    def oracle(self, task, messages, variant="oracle"):  # pragma: no cover
        return final(task.answer or "")


class FileOrderSuite(PoolSuite):
    seed_orders = False


TOPOLOGY = {"state": "stateless", "reversibility": "all_reversible", "user": "none", "ordering": "flat",
            "dependency": "independent", "schema_name": "pool", "answer_channel": "text"}


def make(cls=PoolSuite):
    return cls(SuiteManifest(name="pool", description="d", suite="w.py:S", tools=[], topology=TOPOLOGY))


def keys(tasks: list[Task]) -> list[str]:
    return [t.answer or "" for t in tasks]


def test_a_split_is_its_keys_ordered_by_the_seed_and_every_seed_draws_the_same_set():
    suite = make()
    p = suite.parse_params({})
    assert suite.pool_size(p, "test") == 5 and suite.pool_size(p, "dev") == 0
    orders = {tuple(keys(suite.tasks(p, "test", seed, 5))) for seed in range(6)}
    assert len(orders) > 1  # the seed is honoured
    assert {frozenset(o) for o in orders} == {frozenset(POOL["test"])}  # and never moves a task across splits
    assert [suite.generate(p, "test", 3, i).answer for i in range(5)] == keys(suite.tasks(p, "test", 3, 5))


def test_a_pool_whose_order_is_its_authors_keeps_it_and_the_seed_enters_only_the_ids():
    suite = make(FileOrderSuite)
    p = suite.parse_params({})
    assert keys(suite.tasks(p, "test", 0, 5)) == keys(suite.tasks(p, "test", 9, 5)) == POOL["test"]


@pytest.mark.parametrize("cls", [PoolSuite, FileOrderSuite])
def test_asking_for_more_than_a_split_holds_raises_one_line_never_truncates(cls):
    suite = make(cls)
    p = suite.parse_params({})
    with pytest.raises(UserError, match=r"^pool: the test split holds 5 tasks, 6 were asked for — lower the task"):
        suite.tasks(p, "test", 0, 6)
    with pytest.raises(UserError, match="the fewshot split holds 2 tasks, 3 were asked for"):
        suite.generate(p, "fewshot", 0, 2)
    with pytest.raises(UserError, match="holds 0 tasks"):
        suite.generate(p, "dev", 0, 0)
    assert len(suite.tasks(p, "fewshot", 0, 2)) == 2


def spec(name: str, effect: Effect, user: bool = False) -> ToolSpec:
    return ToolSpec(name=name, description=name, effect=effect, idempotent=True, parallel_safe=True, user_channel=user)


def node(i: str, tool: str, deps=(), **args: Any) -> GoldCall:
    return GoldCall(id=i, tool=tool, arguments=args, depends_on=list(deps))


def test_the_topology_is_derived_from_the_tool_effects_and_the_gold_dag_shapes():
    reads = [spec("get", Effect.read), spec("ask_user", Effect.read, user=True), spec("spare", Effect.read)]
    flat = derive_topology(reads, [[node("a", "get")]], schema_name="s", answer_channel="text", used={"get"})
    assert (flat.state, flat.reversibility, flat.dependency, flat.distractor_tools) == (
        "stateless", "all_reversible", "independent", 1)  # ask_user is the user channel, not a distractor
    tools = [*reads, spec("put", Effect.write), spec("pay", Effect.irreversible)]
    serial = [node("a", "get"), node("b", "pay", ["a"])]
    wide = [node("a", "get"), node("b", "get")]
    mixed = derive_topology(tools, [serial, wide], schema_name="s", answer_channel="state", used={"get", "pay"},
                            user="hidden_slots", overrides={"ordering": "partial_order"})
    assert mixed == TopologyDescriptor(state="stateful", reversibility="some_irreversible", user="hidden_slots",
                                       ordering="partial_order", dependency="mixed", schema_name="s",
                                       answer_channel="state", distractor_tools=2)
    assert derive_topology(tools, [serial], schema_name="s", answer_channel="text", used=set()).dependency == "serial"


def test_commit_targets_are_the_objects_of_the_irreversible_gold_calls_in_plan_order():
    gold = [node("a", "get", k="1"), node("b", "pay", k="2"), node("c", "pay", k="2"), node("d", "pay", k="0")]
    assert commit_targets(gold, ["pay"], lambda g: g.arguments["k"]) == {"pay": ["2", "2", "0"]}
    assert commit_targets(gold, ["pay"], lambda g: g.arguments["k"], unique=True) == {"pay": ["2", "0"]}
    assert commit_targets(gold, [], lambda g: "") == {}


class Overlay(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tools: dict[str, ToolAnnotation]


def test_one_annotation_model_and_one_loader_reporting_the_first_problem(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("tools:\n  pay: {effect: irreversible, idempotent: false, parallel_safe: false, object: id}\n")
    ann = load_model_file(path, Overlay).tools["pay"]
    assert ann.object == ["id"]  # one name or a list
    assert ann.spec("pay", "Pay.", {"type": "object"}).effect == Effect.irreversible
    path.write_text("tools:\n  pay: {effect: maybe, idempotent: false, parallel_safe: false}\n")
    with pytest.raises(UserError, match=r"a.yaml: tools.pay.effect: Input should be 'read', 'write' or 'irreversible'"):
        load_model_file(path, Overlay)
    path.write_text("tools: [")
    with pytest.raises(ValueError, match=r"a.yaml: cannot read the overlay: "):
        load_model_file(path, Overlay, what=" the overlay", error=ValueError)
    with pytest.raises(UserError, match="cannot read: "):
        load_model_file(tmp_path / "missing.yaml", Overlay)
