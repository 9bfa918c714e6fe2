"""The properties the decision-quality dimensions keep, on every shipped topology.

Every generated suite (wiki, travel) with its defaults and under each transform that applies to
it, and every topology of every shipped protocol (train, test, ladder):

- ``noop``: every dimension that applies to its episode is 0, and its dq is 0 on every task;
- ``random``: the mean of every dimension is at most 0.25 and its mean dq at most 0.2 (100 tasks);
- ``oracle-quit-early``: success 0, and parallelism and efficiency at most its coverage + 0.05 on
  every task;
- the oracle scores 1.0 on every dimension of every task;
- monotone: along growing prefixes of the oracle's own episode, coverage, efficiency and
  parallelism never fall.
"""

import asyncio
import importlib.util

import pytest

from topoeval.core.errors import UserError
from topoeval.core.policy import SamplingParams
from topoeval.metrics.dimensions import DIMENSIONS, decision_quality
from topoeval.policies.registry import make_policy
from topoeval.protocol.discovery import SuiteRegistry, protocol_names
from topoeval.protocol.loader import load_protocol
from topoeval.protocol.schema import Limits, TopologySpec
from topoeval.protocol.topology import resolve
from topoeval.runner.episode import run_episode

GENERATED = ("wiki", "travel")
TRANSFORMS = [("rename_tools", {"seed": 1}), ("rename_args", {"seed": 1}), ("distractor_tools", {"n": 2}),
              ("batch_api", {}), ("no_batch", {}), ("hide_slots", {"slots": ["dates"]}),
              ("hide_slots", {"slots": ["budget", "airline"]}), ("shuffle_priority", {"seed": 1}),
              ("merge_hold_pay", {}), ("refundable", {}), ("split_instructions", {})]
LIMITS = Limits(max_turns=30, max_tool_calls=60)


def shipped_specs() -> dict[str, TopologySpec]:
    """Name -> spec of every distinct shipped topology over the generated suites."""
    specs: dict[str, TopologySpec] = {}
    for suite in GENERATED:
        specs[suite] = TopologySpec(name=suite, suite=suite)
        for name, args in TRANSFORMS:
            label = f"{suite}+{name}" + ("" if name != "hide_slots" else "(" + ",".join(args["slots"]) + ")")
            specs[label] = TopologySpec(name=label, suite=suite, transforms=[{"name": name, "args": args}])
    registry = SuiteRegistry()
    for p in protocol_names():
        if p.startswith("wiki_to_tau2") and importlib.util.find_spec("tau2") is None:
            continue  # τ² lives in .venv-tau2 (its topologies are not generated suites anyway)
        proto = load_protocol(p, registry)
        for t in proto.declared_topologies():  # a matrix has no train or test: its topologies
            if t.suite in GENERATED:
                specs[f"{p}/{t.name}"] = t
    out, seen = {}, set()
    for label, spec in specs.items():
        key = spec.model_dump_json(exclude={"name", "role", "axis", "n_tasks"})
        if key not in seen:
            seen.add(key)
            out[label] = spec
    return out


def _resolved():
    registry = SuiteRegistry()
    out = {}
    for label, spec in shipped_specs().items():
        try:
            out[label] = resolve(spec, registry)
        except UserError:  # a transform that does not apply to this suite (hide_slots on the wiki)
            continue
    return out


TOPOLOGIES = _resolved()


def episodes(topology, policy_name: str, n: int) -> list[tuple]:
    policy = make_policy(policy_name)

    async def go():
        out = []
        for task in topology.tasks("test", 0, n):
            rec = await run_episode(policy=policy, suite=topology.suite, task=task, system_prompt="", demos=[],
                                    limits=LIMITS, sampling=SamplingParams(), sample=0, shots=0, labels={})
            out.append((task, rec))
        return out

    return asyncio.run(go())


def test_the_shipped_topologies_are_all_here():
    assert len(TOPOLOGIES) >= 20
    assert {"travel+refundable", "wiki+batch_api", "wiki_to_travel_ladder/travel-no-user"} <= set(TOPOLOGIES)


@pytest.mark.parametrize("label", sorted(TOPOLOGIES))
def test_noop_scores_zero_wherever_a_dimension_applies(label):
    for task, rec in episodes(TOPOLOGIES[label], "noop", 100):
        s = rec["scores"]
        assert s["dq"] == 0.0, task.id
        assert all(s[d] in (None, 0.0) for d in DIMENSIONS), (task.id, s)
        if not task.hidden_slots and task.gold:
            # null is allowed only where the plan hinges on a slot the user holds and noop never asked for
            assert s["efficiency"] == 0.0, task.id


@pytest.mark.parametrize("label", sorted(TOPOLOGIES))
def test_random_earns_no_decision_quality(label):
    rows = [rec["scores"] for _, rec in episodes(TOPOLOGIES[label], "random", 100)]
    for dim in DIMENSIONS:
        vals = [r[dim] for r in rows if r[dim] is not None]
        if vals:
            assert sum(vals) / len(vals) <= 0.25, (dim, sum(vals) / len(vals))
    dqs = [r["dq"] for r in rows if r["dq"] is not None]
    assert sum(dqs) / len(dqs) <= 0.2


@pytest.mark.parametrize("label", sorted(TOPOLOGIES))
def test_quitting_halfway_scores_at_most_the_coverage(label):
    for task, rec in episodes(TOPOLOGIES[label], "oracle-quit-early", 40):
        s = rec["scores"]
        assert s["success"] == 0.0, task.id
        for dim in ("parallelism", "efficiency"):
            if s[dim] is not None:
                assert s[dim] <= (s["coverage"] or 0.0) + 0.05, (task.id, dim, s)


@pytest.mark.parametrize("label", sorted(TOPOLOGIES))
def test_the_oracle_scores_one_and_is_monotone_along_its_own_plan(label):
    topology = TOPOLOGIES[label]
    tools = {t.name: t for t in topology.suite.tools}
    serial_only = topology.suite.manifest.topology.calls_per_turn == 1
    for task, rec in episodes(topology, "oracle", 40):
        s = rec["scores"]
        assert all(s[d] in (None, 1.0) for d in (*DIMENSIONS, "coverage")), (task.id, s)
        calls, events = topology.suite.expand_calls(rec["calls"], rec["events"])
        before = (0.0, 0.0, 0.0)
        for k in range(1, len(calls) + 1):
            prefix = {"calls": calls[:k], "events": [e for e in events if e.get("call", -1) < k]}
            dq = decision_quality(task, prefix, tools, serial_only)
            now = tuple(dq[m] for m in ("coverage", "efficiency", "parallelism"))
            assert all(b is None or a is None or a >= b for b, a in zip(before, now)), (task.id, k, before, now)
            before = tuple(b if a is None else a for b, a in zip(before, now))
