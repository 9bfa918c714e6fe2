"""The bfcl suite: BFCL v4 multi-turn worlds, cross-checked against bfcl-eval's own checker.

Needs the bfcl extra (``make install`` installs it); without it the module is skipped.
"""

import asyncio
import importlib
import random
import uuid

import pytest

pytest.importorskip("bfcl_eval", reason="the bfcl extra is not installed (make install adds it)")

from topoeval.core.errors import UserError  # noqa: E402
from topoeval.core.gold import dag_levels  # noqa: E402
from topoeval.core.messages import calls, final  # noqa: E402
from topoeval.core.policy import Policy, SamplingParams  # noqa: E402
from topoeval.policies.reference import episode_messages  # noqa: E402
from topoeval.policies.registry import make_policy  # noqa: E402
from topoeval.protocol.discovery import SuiteRegistry  # noqa: E402
from topoeval.protocol.schema import Limits, TopologySpec  # noqa: E402
from topoeval.protocol.topology import resolve  # noqa: E402
from topoeval.runner.episode import run_episode  # noqa: E402

VARIANTS = ("base", "long_context", "miss_func", "miss_param")
LIMITS = Limits(max_turns=200, max_tool_calls=1000, max_turns_per_instruction=40)


@pytest.fixture(scope="module")
def registry():
    return SuiteRegistry()


@pytest.fixture(scope="module")
def modules(registry):
    registry.get("bfcl")  # registers the suite folder as a package
    return {name: importlib.import_module(f"topoeval_suite_bfcl.{name}") for name in ("data", "calls", "world")}


@pytest.fixture(scope="module")
def every_task(registry):
    """All 800 task-variants (benchmark mode), with their topologies."""
    out = {}
    for variant in VARIANTS:
        topo = resolve(TopologySpec(name=variant, suite="bfcl", params={"variant": variant, "split_mode": "benchmark"}),
                       registry)
        out[variant] = (topo, topo.tasks("test", 0, 200))
    return out


class Scripted(Policy):
    """Plays a fixed trajectory: per user turn, a list of steps, each a list of (tool, arguments)."""

    name = "scripted"

    def __init__(self, plan):
        self.plan = plan

    async def act(self, messages, tools, sampling, ctx):
        mine = episode_messages(messages, ctx.task.prompt)
        turn = sum(1 for m in mine if m["role"] == "user") - 1
        last_user = max(i for i, m in enumerate(mine) if m["role"] == "user")
        step = sum(1 for m in mine[last_user:] if m["role"] == "assistant")
        steps = self.plan[turn] if turn < len(self.plan) else []
        return calls(*steps[step]) if step < len(steps) else final("ok")


def play(topo, task, plan):
    return asyncio.run(run_episode(policy=Scripted(plan), suite=topo.suite, task=task, system_prompt="s", demos=[],
                                   limits=LIMITS, sampling=SamplingParams(), sample=0, shots=0, labels={}))


def rollout(topo, task, model):
    return asyncio.run(run_episode(policy=make_policy(model), suite=topo.suite, task=task, system_prompt="s", demos=[],
                                   limits=LIMITS, sampling=SamplingParams(), sample=0, shots=0, labels={}))


def call_string(name, arguments):
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


def bfcl_verdict(modules, task, plan):
    """bfcl-eval's own multi_turn_checker on the same trajectory, under a model name never used before."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    row = next(r for r in modules["data"].scenarios(task.data["variant"]) if r["id"] == task.data["bfcl_id"])
    entry = {k: v for k, v in row.items() if k != "ground_truth"}
    decoded = [[[call_string(n, a) for n, a in step] for step in turn] for turn in plan]
    category = row["id"].rsplit("_", 1)[0]
    return multi_turn_checker(decoded, row["ground_truth"], entry, category, f"topoeval_xcheck_{uuid.uuid4().hex}")["valid"]


def ground_truth_plan(modules, task):
    parse = modules["calls"].parse_call
    return [[[parse(c)] for c in turn] for turn in task.data["ground_truth"]]


def offered_at(task):
    """Tool name -> first user turn it is offered in (absent: always)."""
    return {name: i + 1 for i, ins in enumerate(task.instructions) for name in ins.tools_added}


def mutations(task, plan, rng):
    """Deliberately wrong (or right-by-luck) trajectories, each using only tools offered at that turn."""
    flat = [(t, s) for t, turn in enumerate(plan) for s in range(len(turn))]
    out = {}
    if flat:
        t, s = rng.choice(flat)
        out["drop_call"] = [[st for j, st in enumerate(turn) if (i, j) != (t, s)] for i, turn in enumerate(plan)]
        t, s = rng.choice(flat)
        name, args = plan[t][s][0]
        keys = [k for k, v in args.items() if isinstance(v, (str, int, float, bool))]
        if keys:
            k = rng.choice(keys)
            v = args[k]
            new = (not v) if isinstance(v, bool) else v + "_x" if isinstance(v, str) else v + 1
            out["wrong_argument"] = [[[(name, {**args, k: new})] if (i, j) == (t, s) else st for j, st in enumerate(turn)]
                                     for i, turn in enumerate(plan)]
        t, s = rng.choice(flat)
        out["repeat_call"] = [[st for j, st in enumerate(turn) for _ in range(2 if (i, j) == (t, s) else 1)]
                              for i, turn in enumerate(plan)]
    pairs = [(t, s) for t, turn in enumerate(plan) for s in range(len(turn) - 1)]
    if pairs:
        t, s = rng.choice(pairs)
        swapped = [list(turn) for turn in plan]
        swapped[t][s], swapped[t][s + 1] = swapped[t][s + 1], swapped[t][s]
        out["swap_in_turn"] = swapped
    available = offered_at(task)
    early = [t for t in range(len(plan) - 1) if plan[t + 1]
             and all(available.get(c[0], 0) <= t for c in plan[t + 1][0])]
    if early:
        t = rng.choice(early)
        moved = [list(turn) for turn in plan]
        moved[t].append(moved[t + 1].pop(0))
        out["one_turn_early"] = moved
    empty = [t for t, turn in enumerate(plan) if not turn and t + 1 < len(plan) and plan[t + 1]
             and all(available.get(c[0], 0) <= t for c in plan[t + 1][0])]
    if empty:
        t = rng.choice(empty)
        premature = [list(turn) for turn in plan]
        premature[t] = [premature[t + 1][0]]
        out["acts_on_a_turn_it_should_not"] = premature
    out["stops_after_first_turn"] = [plan[0]] + [[] for _ in plan[1:]]
    return out


def test_every_ground_truth_call_parses_with_ast_and_fits_its_schema(modules):
    import jsonschema

    specs = {s.name: s for s in modules["data"].tool_specs()}
    assert len(specs) == 128
    validators = {name: jsonschema.Draft202012Validator(s.parameters) for name, s in specs.items()}
    n = 0
    for variant in VARIANTS:
        for row in modules["data"].scenarios(variant):
            for turn in row["ground_truth"]:
                for text in turn:
                    name, args = modules["calls"].parse_call(text)
                    assert validators[name].is_valid(args), text
                    n += 1
    assert n == 4625


def test_the_call_parser_never_evaluates(modules):
    parse, bad = modules["calls"].parse_call, modules["calls"].CallSyntaxError
    assert parse("sort('report.txt')") == ("sort", {"file_name": "report.txt"})
    assert parse("mean(numbers=(1, 2.5))") == ("mean", {"numbers": [1, 2.5]})
    for text in ("__import__('os').system('true')", "ls(a=open('x'))", "os.remove('x')", "ls(**{'a': 1})", "ls(a="):
        with pytest.raises(bad):
            parse(text)


@pytest.mark.slow
def test_oracle_passes_and_noop_fails_all_800_task_variants(every_task):
    for variant, (topo, tasks) in every_task.items():
        assert len({t.data["bfcl_id"] for t in tasks}) == 200
        for task in tasks:
            good = rollout(topo, task, "oracle")
            assert good["scores"]["success"] == 1.0, (task.data["bfcl_id"], good["status"], good["events"][-3:])
            assert good["scores"]["invalid_calls"] == 0 and good["scores"]["serial_violations"] == 0
            for dim in ("risk", "parallelism", "efficiency", "dq"):
                assert good["scores"][dim] in (None, 1.0), (task.data["bfcl_id"], dim)
            assert rollout(topo, task, "noop")["scores"]["success"] == 0.0, task.data["bfcl_id"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_our_verdict_agrees_with_bfcl_multi_turn_checker(modules, every_task, variant):
    """Ground truths and deliberately wrong trajectories: topoeval's success equals BFCL's verdict
    on every case (a fresh model name per checker call, so BFCL's instance cache cannot leak)."""
    topo, tasks = every_task[variant]
    rng = random.Random(f"xcheck:{variant}")
    agree = {}
    sample = tasks if variant == "base" else rng.sample(tasks, 40)
    for task in sample:
        plan = ground_truth_plan(modules, task)
        cases = {"ground_truth": plan, **mutations(task, plan, random.Random(task.data["bfcl_id"]))}
        for kind, trajectory in cases.items():
            ours = play(topo, task, trajectory)["scores"]["success"] == 1.0
            theirs = bfcl_verdict(modules, task, trajectory)
            assert ours == theirs, (task.data["bfcl_id"], kind, ours, theirs)
            agree.setdefault(kind, []).append(ours)
    assert all(agree["ground_truth"])
    # the wrong trajectories really are wrong, mostly: the comparison is not between two always-yes
    for kind in ("drop_call", "stops_after_first_turn"):
        assert sum(agree[kind]) < 0.5 * len(agree[kind]), kind
    assert not all(agree["wrong_argument"])


def test_no_read_tool_changes_state(modules):
    """The annotations' read tools: every ground-truth read call of the 800 replays, and every read
    tool called with schema-valid arguments, leaves the world's snapshot unchanged."""
    data, world_mod, parse = modules["data"], modules["world"], modules["calls"].parse_call
    specs = {s.name: s for s in data.tool_specs()}
    reads = {n for n, s in specs.items() if s.effect.value == "read"}
    exercised = set()
    for variant in VARIANTS:
        for row in data.scenarios(variant):
            world = world_mod.BfclWorld({**row, "long_context": variant == "long_context"})
            for turn in row["ground_truth"]:
                for text in turn:
                    name, args = parse(text)
                    before = world.snapshot()
                    try:
                        world.call(name, args)
                    except Exception:
                        pass
                    if name in reads:
                        assert world.snapshot() == before, (row["id"], text)
                        exercised.add(name)
    rows = data.scenarios("base")
    for name in sorted(reads - exercised):
        cls = data.tool_class(name)
        row = next(r for r in rows if cls in r["involved_classes"])
        world = world_mod.BfclWorld({**row, "long_context": False})
        before = world.snapshot()
        try:
            world.call(name, _sample_arguments(specs[name].parameters))
        except Exception:
            pass
        assert world.snapshot() == before, name
        exercised.add(name)
    assert exercised == reads


def _sample_arguments(schema):
    values = {"string": "x", "integer": 2, "number": 2.0, "boolean": False, "array": ["x"], "object": {}}
    out = {}
    for key in schema.get("required", []):
        kind = schema["properties"][key].get("type", "string")
        kind = kind[0] if isinstance(kind, list) else kind
        out[key] = schema["properties"][key]["enum"][0] if "enum" in schema["properties"][key] else values[kind]
    return out


def test_tasks_offer_only_their_classes_and_reveal_held_out_functions(every_task, modules):
    data = modules["data"]
    topo, tasks = every_task["miss_func"]
    for task in tasks:
        offered = {t.name for t in topo.suite.tools} - set(task.withheld_tools)
        assert {data.tool_class(n) for n in offered} == set(task.data["involved_classes"])
        added = [n for i in task.instructions for n in i.tools_added]
        assert added and set(added) <= set(task.withheld_tools)
    # a held-out function is offered once its turn comes, never before
    task = tasks[0]
    record = rollout(topo, task, "oracle")
    revealed_at = offered_at(task)
    for c in record["calls"]:
        user_turn = max([e["index"] for e in record["events"]
                         if e["type"] == "instruction" and e["turn"] <= c["turn"]], default=0)
        assert revealed_at.get(c["name"], 0) <= user_turn


def test_gold_dags_follow_turns_and_the_oracle_uses_their_parallelism(every_task):
    topo, tasks = every_task["base"]
    wide = [t for t in tasks if max(len(level) for level in dag_levels(t.gold)) >= 2]
    assert len(wide) >= 95  # 104 of 200 measured with the commutation test (56 by the annotations alone)
    for task in tasks:
        levels = dag_levels(task.gold)
        position = {g.id: d for d, level in enumerate(levels) for g in level}
        for g in task.gold:  # a later instruction's calls come after every earlier one's
            assert all(position[g.id] > position[o.id] for o in task.gold if o.instruction < g.instruction)
        record = rollout(topo, task, "oracle")
        assert len({c["turn"] for c in record["calls"]}) == len(levels)


def test_miss_turns_are_scored(every_task, modules):
    """On miss_param / miss_func the turn with an empty ground truth wants no call: an agent that
    acts there anyway (the next turn's write, early) is told apart by ``abstained``."""
    topo, tasks = every_task["miss_param"]
    task = next(t for t in tasks if any(not turn for turn in t.data["ground_truth"]))
    plan = ground_truth_plan(modules, task)
    assert rollout(topo, task, "oracle")["scores"]["abstained"] == 1.0
    empty = next(i for i, turn in enumerate(plan) if not turn)
    eager = [list(turn) for turn in plan]
    eager[empty] = [[("ls", {})]] if "GorillaFileSystem" in task.data["involved_classes"] else [plan[empty + 1][0]]
    scores = play(topo, task, eager)["scores"]
    assert scores["abstained"] == 0.0
    assert rollout(topo, tasks[0], "noop")["scores"]["abstained"] == 1.0


def test_splits_partition_scenarios_and_bad_params_are_one_line(registry):
    suite = registry.get("bfcl")
    p = suite.parse_params({})
    seen = {}
    for split, n in (("test", 99), ("train", 61), ("dev", 14), ("fewshot", 26)):
        ids = {t.data["bfcl_id"].rsplit("_", 1)[1] for t in suite.tasks(p, split, 3, n)}
        assert len(ids) == n
        for other, other_ids in seen.items():
            assert not ids & other_ids, (split, other)
        seen[split] = ids
    with pytest.raises(UserError, match=r"bfcl: the test split holds 99 tasks \(split_mode: partition\), 100 were"):
        suite.generate(p, "test", 3, 99)
    with pytest.raises(UserError, match=r"holds 99 tasks \(split_mode: partition\), 100 were asked for"):
        suite.tasks(p, "test", 3, 100)  # raised, never truncated
    with pytest.raises(UserError, match="holds 0"):
        suite.generate(suite.parse_params({"split_mode": "benchmark"}), "train", 0, 0)
    with pytest.raises(Exception, match="variant"):
        suite.parse_params({"variant": "multi"})


def test_validity_protocol_through_topoeval_run(tmp_path):
    """The path `topoeval run bfcl_validity` takes, on a deterministic sample (the full 800 run is
    in docs/suites-bfcl.md)."""
    from topoeval.runner.run import arun_episodes

    run = asyncio.run(arun_episodes("bfcl_validity", ["oracle", "noop"], tmp_path, tasks=12))
    assert len(run.records) == 2 * 4 * 12 and run.errors == 0
    for record in run.records:
        assert record["scores"]["success"] == (1.0 if record["model"] == "oracle" else 0.0), record["task_id"]


def test_gold_dependencies_are_measured_by_commutation(modules, registry):
    """Two calls of one class depend on each other only when their two orders differ (a result or
    the public state); calls of different classes only through data flow."""
    gold = importlib.import_module("topoeval_suite_bfcl.gold")
    data = modules["data"]
    methods = {name: owner for name, (owner, _) in data.tool_docs().items()}
    row = next(r for r in data.scenarios("base") if "GorillaFileSystem" in r["involved_classes"])
    world = modules["world"].BfclWorld({**row, "long_context": False})
    fs = world.reference["GorillaFileSystem"]
    ok = lambda a, b: gold.commute(fs, "GorillaFileSystem", methods, a, b)  # noqa: E731
    assert ok("mkdir(dir_name='x1')", "mkdir(dir_name='x2')")  # two new folders: either order
    assert ok("ls()", "pwd()")
    assert not ok("mkdir(dir_name='x1')", "cd(folder='x1')")  # cd into a folder that does not exist yet fails
    assert not ok("mkdir(dir_name='x1')", "ls()")  # ls sees the new folder or not
    # the commutation test never changes the instance it is asked about
    before = modules["world"].instance_state(fs)
    ok("mkdir(dir_name='x3')", "cd(folder='x3')")
    assert modules["world"].instance_state(fs) == before


def test_oracle_serial_lowers_parallelism_by_the_bar_on_bfcl_alone(registry):
    """`topoeval sensitivity --suite bfcl --tasks 20`'s parallelism row: measured 0.55 for
    oracle-serial (a 0.45 drop) on 11 of 20 tasks; it was 0.80 on 6 before the commutation test."""
    from topoeval.analysis.sensitivity import bar_violations, suite_target
    from topoeval.api import sensitivity_matrix as run_matrix

    matrix = run_matrix(suite_target("bfcl", registry), 20)
    assert bar_violations(matrix) == []
    serial = matrix["cells"]["oracle-serial"]["parallelism"]
    assert serial["n"] >= 8 and 1.0 - serial["mean"] >= 0.3


def test_a_turn_whose_dag_does_not_replay_falls_back_to_the_annotations(registry, modules, monkeypatch):
    gold = importlib.import_module("topoeval_suite_bfcl.gold")
    topo = resolve(TopologySpec(name="base", suite="bfcl", params={"split_mode": "benchmark"}), registry)
    measured = topo.tasks("test", 0, 200)
    monkeypatch.setattr(gold, "_replays", lambda *a: False)
    annotated = topo.tasks("test", 0, 200)
    wide = lambda tasks: sum(max(len(level) for level in dag_levels(t.gold)) >= 2 for t in tasks)  # noqa: E731
    assert wide(annotated) == 56 < wide(measured)
    for m, a in zip(measured, annotated):  # the fallback is never wider
        assert len(dag_levels(a.gold)) >= len(dag_levels(m.gold)), m.data["bfcl_id"]
