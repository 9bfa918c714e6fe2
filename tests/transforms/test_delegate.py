"""The one delegating suite under every transform: its declared surface is the whole contract, and
each view passes each member through (tasks mapped by the transform on their way out)."""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel, ConfigDict

from topoeval.core.errors import UserError
from topoeval.core.fixed_pool import FixedPoolSuite
from topoeval.core.messages import calls, final
from topoeval.core.suite import GoldCall, Suite, SuiteManifest, Task, task_id
from topoeval.transforms import SuiteView
from topoeval.transforms.args import SeedArgs
from topoeval.transforms.delegate import FORWARDED, DelegatingSuite
from topoeval.transforms.renaming import rename_tools


def test_the_declared_surface_is_every_method_of_the_suite_contract():
    contract = {n for n, v in vars(Suite).items() if inspect.isfunction(v) and not n.startswith("_")} - {"tool"}
    assert set(FORWARDED) == contract
    assert all(n in vars(DelegatingSuite) for n in FORWARDED)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flag: bool = False


class Inner(FixedPoolSuite[Params]):
    Params = Params

    def split_keys(self, params, split):
        return ["k1", "k2"] if split == "test" else []

    def pool_task(self, params, split, seed, index, key):
        gold = [GoldCall(id="g", tool="search", arguments={"query": key})]
        return Task(id=task_id(self.name, split, index, int(key[1:])), suite=self.name, split=split, index=index,
                    family="f", prompt=key, answer=key, gold=gold)

    def task_problems(self, params):
        return [f"flag is {params.flag}"]

    def make_world(self, task):  # pragma: no cover - not played here
        raise NotImplementedError

    def score(self, task, final_answer, world):  # pragma: no cover
        return {"success": 0.0}

    def oracle(self, task, messages, variant="oracle"):
        return calls(("search", {"query": task.prompt})) if len(messages) < 3 else final(task.prompt)


TOOLS = [{"name": "search", "description": "Search.", "effect": "read", "idempotent": True, "parallel_safe": True,
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}]
TOPOLOGY = {"state": "stateless", "reversibility": "all_reversible", "user": "none", "ordering": "flat",
            "dependency": "independent", "schema_name": "inner", "answer_channel": "text"}


@pytest.fixture()
def inner():
    return Inner(SuiteManifest(name="inner", description="d", suite="w.py:Inner", tools=TOOLS, topology=TOPOLOGY))


def test_a_view_forwards_task_problems_pool_size_and_the_pools_refusal(inner):
    view = SuiteView(inner, {"flag": True}, {"user": "hidden_slots"})
    p = view.parse_params({})
    assert view.task_problems(p) == ["flag is True"]  # a transformed topology keeps its suite's data checks
    assert view.pool_size(p, "test") == 2 and view.topology_for(p).user == "hidden_slots"
    with pytest.raises(UserError, match="the test split holds 2 tasks, 3 were asked for"):
        view.tasks(p, "test", 0, 3)


def test_a_renaming_maps_tasks_from_generate_and_tasks_alike(inner):
    renamed = rename_tools(inner, SeedArgs(seed=1))
    p = renamed.parse_params({})
    outer = renamed.tools_for(p)[0].name
    assert outer != "search"
    drawn = renamed.tasks(p, "test", 4, 2)
    assert [t.gold[0].tool for t in drawn] == [outer, outer]
    assert [t.model_dump() for t in drawn] == [renamed.generate(p, "test", 4, i).model_dump() for i in range(2)]
    assert renamed.oracle(drawn[0], [{"role": "user", "content": "k1"}]).tool_calls[0].name == outer
