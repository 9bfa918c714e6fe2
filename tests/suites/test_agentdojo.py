"""The agentdojo suite: AgentDojo's four worlds behind the suite contract.

Tool schemas from AgentDojo's models, the annotations overlay checked against the worlds' own
state changes, success = AgentDojo's utility (cross-checked against calling the tasks directly),
the gold DAG rules, splits, the import shim and the install hint. Runs through ``topoeval run``
are in test_agentdojo_runs.py.
"""

import asyncio
import fnmatch
import importlib
import json
import subprocess
import sys

import pytest

from tests.suites.agentdojo_helpers import module, rollout
from topoeval.core.errors import UserError
from topoeval.core.gold import critical_path, dag_levels
from topoeval.core.policy import SamplingParams
from topoeval.core.state import state_diff
from topoeval.core.suite import SPLITS
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import run_episode

DOMAINS = {"workspace": (24, 40), "travel": (28, 20), "banking": (11, 16), "slack": (11, 21)}
NOOP_PASSING_BANKING = {"user_task_5", "user_task_6", "user_task_8", "user_task_9", "user_task_10"}


@pytest.fixture(scope="module")
def suite():
    return SuiteRegistry().get("agentdojo")


# -- tools: AgentDojo's own schemas, topoeval's annotations ------------------------------------
@pytest.mark.parametrize("domain", DOMAINS)
def test_tool_schemas_are_agentdojos_own(suite, domain):
    d = module("bridge").load_domain(domain)
    n_tools, n_tasks = DOMAINS[domain]
    assert len(d.suite.tools) == n_tools and len(d.tasks) == n_tasks
    specs = {t.name: t for t in suite.tools_for(suite.parse_params({"domain": domain}))}
    assert list(specs) == [f.name for f in d.suite.tools]
    for f in d.suite.tools:
        schema = f.parameters.model_json_schema()
        schema.pop("title")
        assert specs[f.name].parameters == schema
        assert specs[f.name].description == f.description


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_tool_is_annotated_with_real_argument_names(suite, domain):
    annotations = module("overlay").load_annotations(domain)
    functions = {f.name: f for f in module("bridge").load_domain(domain).suite.tools}
    assert set(annotations.tools) == set(functions)
    for name, a in annotations.tools.items():
        args = set(functions[name].parameters.model_fields)
        assert set(a.object) <= args and set(a.loose_args) <= args and {a.creates} - {None} <= args, name
        assert bool(a.object) == (a.effect == "irreversible"), f"{name}: an irreversible tool names its object"
        assert not a.read_side_effects or a.effect == "read" or name == "post_webpage", name
    assert not any(a.needs_confirmation for a in annotations.tools.values())


@pytest.mark.parametrize("domain", DOMAINS)
def test_ground_truth_replay_agrees_with_the_effect_annotations(domain):
    """Replaying every ground truth, a tool annotated read changes nothing outside its documented
    side effects (mark-as-read, request logs), and every write or irreversible tool changes the
    state (on some call: banking's user_task_9 sets a rent that is already right)."""
    facts, tasks = module("tasks").task_facts(domain), module("tasks")
    annotations = module("overlay").load_annotations(domain)
    d = module("bridge").load_domain(domain)
    seen, changes = set(), set()
    for user_task in d.tasks:
        world = tasks.AgentDojoWorld(d, user_task, annotations)
        for call in d.tasks[user_task].ground_truth(d.fresh_environment(user_task)):
            a = annotations.tools[call.function]
            before = world.snapshot()
            world.execute(call.function, json.loads(json.dumps(dict(call.args))))
            changed = set(state_diff(before, world.snapshot()))
            seen.add(call.function)
            if a.effect == "read":
                outside = {k for k in changed if not any(fnmatch.fnmatchcase(k, p) for p in a.read_side_effects)}
                assert not outside, f"{domain}/{user_task}: read tool {call.function} changed {sorted(outside)[:3]}"
            elif changed:
                changes.add(call.function)
    assert changes == {n for n in seen if annotations.tools[n].effect != "read"}
    # read tools no ground truth uses, called with no arguments where they need none
    world = tasks.AgentDojoWorld(d, next(iter(d.tasks)), annotations)
    for f in d.suite.tools:
        a = annotations.tools[f.name]
        if f.name not in seen and a.effect == "read" and not f.parameters.model_json_schema().get("required"):
            before = world.snapshot()
            world.execute(f.name, {})
            assert set(state_diff(before, world.snapshot())) == set(), f.name
    assert facts


def test_documented_read_side_effects_do_happen():
    """get_unread_emails marks mail read and get_webpage logs the request: why they are listed."""
    tasks = module("tasks")
    unread = tasks.replay("workspace", "user_task_24", [("get_unread_emails", {})])[0]
    assert any(k.endswith(".read") for k in state_diff(unread.pre_env.model_dump(mode="json"),
                                                        unread.env.model_dump(mode="json")))
    web = tasks.replay("slack", "user_task_0", [("get_webpage", {"url": "www.informations.com"})])[0]
    assert web.env.web.web_requests[-1] == "www.informations.com"


@pytest.mark.parametrize("domain", DOMAINS)
def test_topology_descriptor_comes_from_annotations_and_tasks(suite, domain):
    params = suite.parse_params({"domain": domain})
    topo = suite.topology_for(params)
    assert (topo.state, topo.reversibility, topo.user, topo.ordering) == ("stateful", "some_irreversible", "none", "flat")
    assert topo.schema_name == f"agentdojo-{domain}"
    tasks = module("tasks")
    pool = [t for t in tasks.task_facts(domain) if t not in tasks.noop_passes(domain)]
    text = sum(tasks.needs_text(domain, t) for t in pool)
    assert topo.answer_channel == ("text" if text > len(pool) / 2 else "state"), (text, len(pool))
    used = {n.tool for f in tasks.task_facts(domain).values() for n in f.plan}
    assert topo.distractor_tools == DOMAINS[domain][0] - len(used) > 0


def test_utility_needs_the_answer_text_on_43_tasks():
    tasks = module("tasks")
    counts = {d: sum(tasks.needs_text(d, t) for t in tasks.task_facts(d)) for d in DOMAINS}
    assert counts == {"workspace": 22, "travel": 19, "banking": 2, "slack": 0}


# -- success: AgentDojo's own verdict ---------------------------------------------------------
def _direct_utility(domain, user_task, answer, world):
    task = module("bridge").load_domain(domain).tasks[user_task]
    by_trace = task.utility_from_traces(answer, world.pre_env, world.env, world.trace)
    return by_trace if by_trace is not None else task.utility(answer, world.pre_env, world.env)


@pytest.mark.parametrize("domain", DOMAINS)
def test_success_is_agentdojos_utility_called_directly(suite, domain):
    """For every task: the suite's score after the oracle's plan equals the task's own utility
    called directly (1 with the expected text); so does an empty world's (the noop's), checked on
    every task but workspace's, where each check costs a DeepDiff of the whole mailbox (first 8)."""
    tasks = module("tasks")
    params = suite.parse_params({"domain": domain, "include_noop_passing": True, "split_shares": {"test": 1}})
    for i, task in enumerate(suite.tasks(params, "test", 0, DOMAINS[domain][1])):
        user_task = task.data["user_task"]
        world = tasks.oracle_world(domain, user_task)
        assert suite.score(task, task.data["output"], world)["success"] == 1.0 == _direct_utility(
            domain, user_task, task.data["output"], world), user_task
        if domain == "workspace" and i >= 8:
            continue
        empty = suite.make_world(task)
        expected = float(_direct_utility(domain, user_task, "", empty))
        assert suite.score(task, "", empty)["success"] == expected
        assert expected == (domain == "banking" and user_task in NOOP_PASSING_BANKING), user_task


def test_a_wrong_answer_or_a_wrong_transfer_fails(suite):
    params = suite.parse_params({"domain": "banking", "split_shares": {"test": 1}})
    tasks = {t.data["user_task"]: t for t in suite.tasks(params, "test", 0, 11)}
    spending = tasks["user_task_1"]  # the answer text is checked
    assert suite.score(spending, "I could not find it.", module("tasks").oracle_world("banking", "user_task_1"))["success"] == 0
    bill = tasks["user_task_0"]  # the state is checked
    world = suite.make_world(bill)
    world.call("read_file", {"file_path": "bill-december-2023.txt"})
    world.call("send_money", {"recipient": "XX00000000000000000000", "amount": 98.7, "subject": "bill", "date": "2022-01-01"})
    assert suite.score(bill, "", world)["success"] == 0.0
    assert world.events == [{"type": "commit", "tool": "send_money", "object": "xx00000000000000000000"}]
    assert bill.commit_targets == {"send_money": ["uk12345678901234567890"]}


def test_risk_judges_the_object_of_irreversible_calls(suite):
    """A transfer to the ground truth's recipient is safe; one to anybody else is an unsafe commit."""
    from topoeval.core.messages import AssistantMessage, ToolCall, final
    from topoeval.core.policy import Policy

    params = suite.parse_params({"domain": "banking", "split_shares": {"test": 1}})
    bill = next(t for t in suite.tasks(params, "test", 0, 11) if t.data["user_task"] == "user_task_0")

    class Payer(Policy):
        name, concurrency = "payer", 1

        def __init__(self, recipient):
            self.recipient = recipient

        async def act(self, messages, tools, sampling, ctx):
            if messages[-1]["role"] == "tool":
                return final("paid")
            return AssistantMessage(tool_calls=[ToolCall.make("c", "send_money", {
                "recipient": self.recipient, "amount": 98.7, "subject": "bill", "date": "2022-01-01"})])

    def scores(recipient):
        return asyncio.run(run_episode(policy=Payer(recipient), suite=suite, task=bill, system_prompt="", demos=[],
                                       limits=Limits(), sampling=SamplingParams(), sample=0, shots=0, labels={}))["scores"]

    good, bad = scores("UK12345678901234567890"), scores("GB00000000000000000000")
    assert (good["risk"], good["unsafe_commits"], good["success"]) == (1.0, 0, 1.0)
    assert (bad["risk"], bad["unsafe_commits"], bad["success"]) == (0.0, 1, 0.0)


def test_a_tool_error_is_agentdojos_message_and_a_utility_crash_is_a_failure(suite):
    from topoeval.core.suite import ToolError

    params = suite.parse_params({"domain": "slack", "split_shares": {"test": 1}})
    task = suite.tasks(params, "test", 0, 1)[0]
    world = suite.make_world(task)
    with pytest.raises(ToolError, match="not found in the users list"):
        world.call("read_inbox", {"user": "Nobody"})
    world.env = None  # a state no check expects: AgentDojo's check raises, the verdict is a failure
    assert suite.score(task, "x", world)["success"] == 0.0


# -- frozen clock -----------------------------------------------------------------------------
def test_the_clock_is_frozen_and_ticks_per_reading(suite):
    params = suite.parse_params({"domain": "workspace", "split_shares": {"test": 1}})
    task = suite.tasks(params, "test", 0, 1)[0]
    clock = module("bridge").load_domain("workspace").clock
    states = []
    for _ in range(2):
        world = suite.make_world(task)
        for i in range(2):
            world.call("send_email", {"recipients": ["a@b.com"], "subject": f"s{i}", "body": "b"})
        states.append(world.snapshot())
    assert states[0] == states[1]
    stamps = sorted(e["timestamp"] for e in states[0]["inbox"]["emails"].values() if e["subject"] in ("s0", "s1"))
    assert stamps == [clock.isoformat(), clock.replace(second=1).isoformat()]
    import datetime

    email_client = importlib.import_module("agentdojo.default_suites.v1.tools.email_client")
    assert abs(email_client.datetime.datetime.now() - datetime.datetime.now()).total_seconds() < 5  # outside a call


# -- gold DAG ---------------------------------------------------------------------------------
def _annotations(**tools):
    overlay = module("overlay")
    base = {"effect": "read", "idempotent": True, "parallel_safe": True, "why": "test"}
    return overlay.DomainAnnotations(domain="t", answer_channel="text",
                                     tools={n: {**base, **a} for n, a in tools.items()})


def test_dag_rules_data_selection_decision_creation_dedupe_override():
    dag = module("dag")
    ann = _annotations(
        list_hotels={}, ratings={}, prices={}, address={},
        invite={"effect": "irreversible", "idempotent": False, "parallel_safe": False, "object": ["user"], "creates": "user"},
        message={"effect": "irreversible", "idempotent": False, "parallel_safe": False, "object": ["user"],
                 "loose_args": ["body"]},
    )
    hotels = ["Alpha Inn", "Beta House"]
    calls = [("list_hotels", {"city": "Paris"}), ("ratings", {"names": hotels}), ("prices", {"names": hotels}),
             ("address", {"name": "Beta House"}), ("ratings", {"names": hotels}),
             ("invite", {"user": "Dora"}), ("message", {"user": "Dora", "body": "Beta House is best"})]
    results = ["Alpha Inn\nBeta House", "Alpha Inn: 4\nBeta House: 5", "Alpha Inn: 100\nBeta House: 90",
               "1 Rue X", "Alpha Inn: 4\nBeta House: 5", "None", "None"]
    plan, gold = dag.derive("Find the best hotel in Paris and tell Dora.", calls, results,
                            [dag.leaves(r) for r in results], ann)
    deps = {g.id: g.depends_on for g in gold}
    assert [g.id for g in gold] == ["c0", "c1", "c2", "c3", "c5", "c6"]  # the repeated ratings read is dropped
    assert deps["c1"] == ["c0"] and deps["c2"] == ["c0"]  # data; prices of the same hotels do not need the ratings
    assert deps["c3"] == ["c0", "c1", "c2"]  # it selects one hotel from what ratings and prices were given
    assert deps["c5"] == ["c0", "c1", "c2", "c3"]  # decision: the reads just before the write
    assert deps["c6"] == ["c0", "c1", "c2", "c3", "c5"]  # creation: Dora exists once invited
    assert critical_path(gold) == 5 and [len(level) for level in dag_levels(gold)] == [1, 2, 1, 1, 1]
    assert next(g for g in gold if g.id == "c6").arguments == {"user": "Dora"}  # the free-text body is left out
    assert next(p for p in plan if p.id == "c6").arguments["body"] == "Beta House is best"
    _, overridden = dag.derive("Find the best hotel in Paris and tell Dora.", calls, results,
                               [dag.leaves(r) for r in results], ann, {3: [1, 4]})
    assert next(g for g in overridden if g.id == "c3").depends_on == ["c1"]  # index 4 is the dropped copy of 1


def test_real_dags(suite):
    facts = {d: module("tasks").task_facts(d) for d in ("slack", "travel", "banking")}
    deps = lambda d, t: {g.id: g.depends_on for g in facts[d][t].gold}  # noqa: E731
    slack11 = deps("slack", "user_task_11")  # read inbox -> website -> invite Dora -> add her to two channels
    assert slack11["c2"] == ["c0", "c1"] and slack11["c3"] == slack11["c4"] == ["c0", "c1", "c2"]
    travel3 = deps("travel", "user_task_3")  # ratings and prices of the city's hotels run in parallel
    assert travel3["c1"] == travel3["c2"] == ["c0"] and travel3["c3"] == ["c0", "c1", "c2"]
    assert deps("banking", "user_task_3")["c1"] == ["c0"]  # the refund amount comes from the transactions
    assert all(critical_path(list(f.gold)) >= 1 for d in facts.values() for f in d.values())


# -- tasks and splits -------------------------------------------------------------------------
def test_default_pool_excludes_what_the_do_nothing_agent_passes(suite):
    tasks = module("tasks")
    assert tasks.noop_passes("banking") == NOOP_PASSING_BANKING
    assert not any(tasks.noop_passes(d) for d in ("workspace", "travel", "slack"))
    sizes = lambda extra: {d: sum(suite.pool_size(suite.parse_params({"domain": d, **extra}), s) for s in SPLITS)  # noqa: E731
                           for d in DOMAINS}
    assert sizes({}) == {"workspace": 40, "travel": 20, "banking": 11, "slack": 21}
    assert sizes({"include_noop_passing": True}) == {d: n for d, (_, n) in DOMAINS.items()}
    params = suite.parse_params({"domain": "banking", "split_shares": {"test": 1}})
    for task in suite.tasks(params, "test", 0, 11):
        assert task.data["user_task"] not in NOOP_PASSING_BANKING
        assert rollout(suite, task, "noop")["scores"]["success"] == 0.0, task.data["user_task"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_splits_are_disjoint_by_task_id_and_deterministic_by_seed(suite, domain):
    params = suite.parse_params({"domain": domain})
    by_split = {}
    for split in SPLITS:
        n = suite.pool_size(params, split)
        drawn = [t.data["user_task"] for t in suite.tasks(params, split, 7, n)]
        assert drawn == [t.data["user_task"] for t in suite.tasks(params, split, 7, n)]
        assert sorted(drawn) == sorted(t.data["user_task"] for t in suite.tasks(params, split, 8, n))
        by_split[split] = set(drawn)
    assert sum(len(s) for s in by_split.values()) == len(set().union(*by_split.values()))
    assert by_split["dev"] == set() and min(len(by_split[s]) for s in ("train", "test", "fewshot")) >= 2
    orders = {tuple(t.data["user_task"] for t in suite.tasks(params, "test", s, len(by_split["test"]))) for s in range(6)}
    assert len(orders) > 1  # the seed orders the split


def test_partition_follows_the_shares():
    splits = module("splits")
    pool = [f"user_task_{i}" for i in range(11)]
    sizes = {s: len(b) for s, b in splits.partition("banking", pool, {"train": .4, "test": .45, "fewshot": .15}).items()}
    assert sizes == {"train": 4, "dev": 0, "test": 5, "fewshot": 2}
    assert splits.partition("banking", pool, {"test": 1})["test"] == splits.partition("banking", pool, {"test": 1})["test"]
    assert sorted(splits.partition("banking", pool, {"test": 1})["test"]) == sorted(pool)


def test_more_tasks_than_the_split_holds_is_an_error_naming_its_size(suite):
    params = suite.parse_params({"domain": "banking"})
    with pytest.raises(UserError, match=r"agentdojo: the test split holds 5 tasks \(banking: 11 in the domain's pool\), "
                                         r"6 were asked for — lower the task count"):
        suite.tasks(params, "test", 0, 6)
    with pytest.raises(UserError, match="holds 0"):
        suite.generate(params, "dev", 0, 0)


def test_task_fields(suite):
    params = suite.parse_params({"domain": "travel", "split_shares": {"test": 1}})
    tasks = suite.tasks(params, "test", 0, 20)
    assert len({t.id for t in tasks}) == 20 and all(t.id.startswith("agentdojo/test/") for t in tasks)
    assert {t.family for t in tasks} <= {"easy", "medium", "hard"}
    hotel = next(t for t in tasks if t.data["user_task"] == "user_task_0")
    assert hotel.commit_targets == {"reserve_hotel": ["le marais boutique"]}
    assert "reserve_hotel" in hotel.irreversible_tools and hotel.expected_state is None
    assert hotel.prompt == module("bridge").load_domain("travel").tasks["user_task_0"].PROMPT
    assert tasks == suite.tasks(params, "test", 0, 20)  # a pure function of its arguments


def test_params_are_validated(suite):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        suite.parse_params({"domain": "email"})
    with pytest.raises(ValidationError):
        suite.parse_params({"split_shares": {"test": 0}})
    with pytest.raises(ValidationError):
        suite.parse_params({"domains": "banking"})


# -- import shim and install hint -------------------------------------------------------------
def test_no_llm_sdk_is_imported_and_help_does_not_import_agentdojo():
    code = ("import sys; from topoeval.protocol.discovery import SuiteRegistry; r = SuiteRegistry(); r.get('wiki');"
            "import topoeval.cli; assert not [m for m in sys.modules if m.startswith(('agentdojo', 'topoeval_suite_agentdojo'))];"
            "s = r.get('agentdojo'); s.tools_for(s.parse_params({'domain': 'slack'}));"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic', 'google', 'cohere', 'langchain')];"
            "assert 'agentdojo.task_suite' in sys.modules and not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_agentdojo_gives_a_one_line_install_hint(tmp_path):
    code = ("import importlib.util as u; real = u.find_spec;"
            "u.find_spec = lambda name, *a: None if name == 'agentdojo' else real(name, *a);"
            "import sys; from topoeval.cli import main; sys.argv = ['topoeval', 'run', 'agentdojo_cross_domain', "
            f"'--model', 'oracle', '--out', {str(tmp_path / 'run')!r}]; main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'topoeval[agentdojo]'" in lines[0] and "Traceback" not in proc.stderr


def test_a_different_agentdojo_version_is_refused(monkeypatch):
    bridge = module("bridge")
    monkeypatch.setattr(bridge.importlib.metadata, "version", lambda name: "0.1.99")
    bridge.agentdojo_modules.cache_clear()
    try:
        with pytest.raises(UserError, match=r"pinned to AgentDojo 0\.1\.35 but 0\.1\.99 is installed"):
            bridge.agentdojo_modules()
    finally:
        monkeypatch.undo()
        bridge.agentdojo_modules.cache_clear()
        bridge.agentdojo_modules()


def test_the_pin_is_the_same_in_the_extra_the_makefile_and_the_shim():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pin = f"agentdojo=={module('bridge').VERSION}"
    assert f'agentdojo = ["{pin}"]' in (root / "pyproject.toml").read_text()
    assert "--no-deps" in (root / "Makefile").read_text() and pin in (root / "Makefile").read_text()
    assert "agentdojo-lean" in (root / "Makefile").read_text()
