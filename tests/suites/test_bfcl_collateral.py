"""The bfcl suite's collateral damage: entities a user would name, the scope from BFCL's own
ground-truth replay, and oracle-collateral's one write outside the task beside BFCL's verdict.

Needs the bfcl extra (``make install`` installs it); without it the module is skipped.
"""

import asyncio
import importlib

import pytest

pytest.importorskip("bfcl_eval", reason="the bfcl extra is not installed (make install adds it)")

from topoeval.core.collateral import CollateralScope  # noqa: E402
from topoeval.core.policy import SamplingParams  # noqa: E402
from topoeval.policies.registry import REFERENCE  # noqa: E402
from topoeval.protocol.discovery import SuiteRegistry  # noqa: E402
from topoeval.protocol.schema import Limits  # noqa: E402
from topoeval.runner.episode import run_episode  # noqa: E402

LIMITS = Limits(max_turns=200, max_tool_calls=1000, max_turns_per_instruction=40)


@pytest.fixture(scope="module")
def suite():
    return SuiteRegistry().get("bfcl")


@pytest.fixture(scope="module")
def collateral(suite):
    return importlib.import_module("topoeval_suite_bfcl.collateral")


@pytest.fixture(scope="module")
def sample(suite):
    """The test split of the base variant (partition mode): every scenario there, multi-turn all."""
    params = suite.Params()
    return list(suite.tasks(params, "test", 0, len(suite.split_keys(params, "test"))))


def run(suite, task, policy):
    return asyncio.run(run_episode(policy=REFERENCE[policy](), suite=suite, task=task, system_prompt="x", demos=[],
                                   limits=LIMITS, sampling=SamplingParams(), sample=0, shots=0, labels={}))


def test_files_are_paths_and_collections_split_into_what_a_user_names(collateral):
    snapshot = {
        "GorillaFileSystem": {"root": {"contents": {"docs": {"contents": {"a.txt": {"content": "hi"}}},
                                                    "empty": {"contents": {}}}},
                              "cwd": "/workspace/docs", "long_context": False},
        "MessageAPI": {"inbox": [{"USR2": "one"}, {"USR3": "two"}, {"USR2": "three"}], "message_count": 3},
        "TicketAPI": {"ticket_queue": [{"id": 7, "status": "open"}], "ticket_counter": 1, "current_user": None},
        "TravelAPI": {"booking_record": {"B1": {"price": 3}}, "budget_limit": 5.0},
    }
    assert collateral.entities(snapshot) == {
        "GorillaFileSystem:/docs": "<directory>", "GorillaFileSystem:/docs/a.txt": "hi",
        "GorillaFileSystem:/empty": "<directory>", "GorillaFileSystem.cwd": "/workspace/docs",
        "GorillaFileSystem.long_context": False,
        "MessageAPI.inbox.USR2": ["one", "three"], "MessageAPI.inbox.USR3": ["two"], "MessageAPI.message_count": 3,
        "TicketAPI.ticket_queue.7": {"id": 7, "status": "open"}, "TicketAPI.ticket_counter": 1,
        "TicketAPI.current_user": None,
        "TravelAPI.booking_record.B1": {"price": 3}, "TravelAPI.budget_limit": 5.0,
    }
    scope = CollateralScope(ignore=collateral.IGNORE)
    assert [e for e in collateral.entities(snapshot) if scope.ignored(e)] == [
        "GorillaFileSystem.cwd", "GorillaFileSystem.long_context", "MessageAPI.message_count",
        "TicketAPI.ticket_counter"]


def test_the_scope_is_the_state_after_bfcls_ground_truth_replayed_to_the_end(suite, collateral, sample):
    task = next(t for t in sample if "GorillaFileSystem" in t.data["involved_classes"]
                and any("touch(" in c or "mkdir(" in c for calls in t.data["ground_truth"] for c in calls))
    start = collateral.entities(suite.make_world(task).snapshot())
    gold = collateral.entities(collateral.scope(task).gold_state)
    created = sorted(set(gold) - set(start))
    assert created and all(e.startswith("GorillaFileSystem:/") for e in created)
    world = collateral.gold_world(task)
    assert collateral.scope(task).gold_state == {n: collateral.instance_state(i) for n, i in world.reference.items()}


def test_oracle_has_no_collateral_and_oracle_collateral_flags_every_task_with_a_write_outside(suite, collateral,
                                                                                                sample):
    """Base variant, test split: the oracle passes with collateral 0 on every task; oracle-collateral
    reads collateral 1 on every task where the offered tools can write outside the scope, and BFCL's
    own verdict fails it there — except where the last user turn has an empty ground truth, which
    BFCL does not check."""
    assert len(sample) == 99 and sum(1 for t in sample if t.instructions) >= 95  # nearly all multi-turn
    damaged, blind = 0, []
    for task in sample:
        oracle = run(suite, task, "oracle")
        assert (oracle["scores"]["success"], oracle["scores"]["collateral"]) == (1.0, 0.0), task.data["bfcl_id"]
        plan = collateral.damage_plan(task)
        rec = run(suite, task, "oracle-collateral")
        if plan is None:
            assert rec["scores"]["collateral"] == 0.0 and rec["scores"]["success"] == 1.0
            continue
        damaged += 1
        assert rec["scores"]["collateral"] == 1.0, task.data["bfcl_id"]
        kinds = {e["kind"] for e in rec["collateral"]["entities"]}
        assert "wrong_in_scope" not in kinds and "missed" not in kinds, task.data["bfcl_id"]
        unchecked_last_turn = not task.data["ground_truth"][-1]
        assert rec["scores"]["success"] == float(unchecked_last_turn), task.data["bfcl_id"]
        blind += [task.data["bfcl_id"]] if unchecked_last_turn else []
    assert damaged >= 0.95 * len(sample)


def test_the_damage_uses_only_tools_the_task_offers_and_walks_to_a_file_elsewhere(collateral, sample):
    plans = {t.id: collateral.damage_plan(t) for t in sample}
    for task in sample:
        withheld = set(task.withheld_tools) - {n for i in task.instructions for n in i.tools_added}
        for tool, _ in plans[task.id] or []:
            assert tool in collateral.offered_at_end(task) and tool not in withheld
    assert any(len(p) > 1 and p[0][0] == "cd" and p[-1][0] == "rm" for p in plans.values() if p)
    assert any(p and p[-1][0] not in ("rm", "cd", "echo", "touch") for p in plans.values())  # other classes too

