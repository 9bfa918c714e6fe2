"""PlanIndex: positions and keys of a run's planned episodes without a list of keys."""

from topoeval.runner.episode import episode_key
from topoeval.runner.plan_index import PlanIndex


def _plan() -> PlanIndex:
    ids = {"a": ["a/0", "a/1", "a/2"], "b": ["b|odd/0"]}  # a task id may hold the key's separator
    return PlanIndex(["m1", "m2"], ["0-shot", "2-shot"], ids, ["a", "b"], samples=2)


def test_keys_are_the_plan_order_of_model_baseline_topology_task_sample():
    plan = _plan()
    expected = [episode_key(m, b, t, task, s) for m in ("m1", "m2") for b in ("0-shot", "2-shot")
                for t in ("a", "b") for task in plan.task_ids[t] for s in range(2)]
    assert list(plan.keys()) == expected and len(plan) == len(expected) == 32
    assert [plan.key(pos) for pos in range(len(plan))] == expected
    assert [(pos, key) for pos, _, key in plan.entries()] == list(enumerate(expected))


def test_position_inverts_key_and_refuses_what_the_plan_does_not_hold():
    plan = _plan()
    assert [plan.position(key) for key in plan.keys()] == list(range(len(plan)))
    assert plan.position_of("m2", "2-shot", "b", 0, 1) == plan.position(episode_key("m2", "2-shot", "b", "b|odd/0", 1))
    for key in ("m3|0-shot|a|a/0|0", "m1|0-shot|a|a/9|0", "m1|0-shot|a|a/0|2", "m1|1-shot|a|a/0|0", "nonsense"):
        assert plan.position(key) is None
