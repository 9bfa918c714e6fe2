"""Ladder shapes, by the stated rule, on hand-built curves."""

from topoeval.analysis.ladder import build_ladders, name_shape

AXES = [None, "schema", "state", "user", "reversibility", "ordering"]


def test_flat():
    assert name_shape([1, 1, 1, 1, 1, 1], AXES, 0.0) == {"shape": "flat", "breaking_axis": None}
    assert name_shape([0.8, 0.78, 0.79, 0.77, 0.8, 0.76], AXES, 0.05)["shape"] == "flat"


def test_floor_is_nothing_solved_anywhere_not_flat():
    assert name_shape([0, 0, 0, 0, 0, 0], AXES, 0.0) == {"shape": "floor", "breaking_axis": None}
    assert name_shape([0.0, 0.0, 0.0], AXES[:3], 0.2)["shape"] == "floor"
    # one step above the floor is a curve again, named by the other rules
    assert name_shape([0.05, 0, 0, 0, 0, 0], AXES, 0.05)["shape"] == "flat"
    assert name_shape([0.5, 0, 0, 0, 0, 0], AXES, 0.0)["shape"] == "cliff at schema"


def test_cliff_names_its_axis():
    r = name_shape([0.9, 0.9, 0.88, 0.2, 0.2, 0.18], AXES, 0.0)
    assert r == {"shape": "cliff at user", "breaking_axis": "user"}


def test_steps_and_linear():
    assert name_shape([1.0, 1.0, 0.6, 0.6, 0.2, 0.2], AXES, 0.0)["shape"] == "steps"
    assert name_shape([1.0, 0.85, 0.7, 0.55, 0.4, 0.25], AXES, 0.0)["shape"] == "linear"


def test_rises_is_not_a_collapse():
    assert name_shape([0.5, 0.5, 0.8, 0.9, 0.9, 0.9], AXES, 0.01) == {"shape": "rises", "breaking_axis": None}


def test_undefined_steps_are_left_out_of_the_shape():
    def cell(topo, mean):
        return {"model": "m", "baseline": "0-shot", "topology": topo, "role": "ladder",
                "metrics": {"success": {"mean": 1.0, "std": 0.0}, "risk": {"mean": mean, "std": 0.0, "se": 0.0}}}

    steps = [("s0", None), ("s1", "user"), ("s2", "reversibility"), ("s3", "ordering")]
    (entry,) = build_ladders([cell("s0", None), cell("s1", None), cell("s2", 1.0), cell("s3", 0.2)], steps)
    risk = entry["metrics"]["risk"]
    assert [p["mean"] for p in risk["curve"]] == [None, None, 1.0, 0.2]
    assert risk["shape"] == "cliff at ordering" and risk["steps_defined"] == 2


def test_recovers():
    r = name_shape([0.9, 0.3, 0.3, 0.8, 0.8, 0.8], AXES, 0.05)
    assert r["shape"] == "recovers" and r["breaking_axis"] == "schema"


def test_build_ladders_from_cells():
    def cell(topo, mean):
        return {"model": "m", "baseline": "0-shot", "topology": topo, "role": "ladder",
                "metrics": {"success": {"mean": mean, "std": 0.0, "ci95": [mean, mean]}}}

    steps = [("s0", None), ("s1", "schema"), ("s2", "user")]
    (entry,) = build_ladders([cell("s0", 1.0), cell("s1", 0.95), cell("s2", 0.1)], steps)
    success = entry["metrics"]["success"]
    assert success["shape"] == "cliff at user" and [p["mean"] for p in success["curve"]] == [1.0, 0.95, 0.1]


LADDER_PROTOCOL = """\
name: ladder_demo
train: {name: wiki, suite: wiki, params: {question_types: [single, chain], hops: [2]}}
test:
  - {name: wiki, role: id, suite: wiki, params: {question_types: [single, chain], hops: [2]}}
  - {name: travel, role: ood, suite: travel, params: {families: [full, flexible]}}
ladder:
  - name: L1-renamed
    axis: schema
    suite: wiki
    params: {question_types: [single, chain], hops: [2]}
    transforms: [{name: rename_tools, args: {seed: 1}}]
  - {name: L2-travel, axis: state, suite: travel, params: {families: [full, flexible], user: false}}
  - name: L3-user
    axis: user
    suite: travel
    params: {families: [full, flexible]}
    transforms: [{name: hide_slots, args: {slots: [budget, airline]}}]
tasks: {test: {n: 6, seed: 1}, fewshot: {n: 2, seed: 2}}
"""


def test_ladder_end_to_end_shapes_of_reference_policies(tmp_path):
    import topoeval

    path = tmp_path / "ladder.yaml"
    path.write_text(LADDER_PROTOCOL)
    res = topoeval.run_protocol(path, ["oracle", "oracle-no-ask", "noop"], tmp_path / "r")
    ladders = {e["model"]: e["metrics"] for e in res.summary["ladder"]}
    assert ladders["oracle"]["success"]["shape"] == "flat"
    assert ladders["oracle"]["dq"]["shape"] == "flat"
    assert [p["topology"] for p in ladders["oracle"]["success"]["curve"]] == ["wiki", "L1-renamed", "L2-travel", "L3-user"]
    no_ask = ladders["oracle-no-ask"]["success"]
    assert no_ask["shape"] == "cliff at user" and no_ask["breaking_axis"] == "user"
    assert ladders["noop"]["success"]["shape"] == "floor"  # solves nothing on any step
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## Ladder" in md and "| oracle-no-ask | 0-shot | success | 1.00 | 1.00 | 1.00 |" in md


def test_shipped_ladder_names_each_flawed_oracle_by_the_axis_it_ignores(tmp_path):
    """The proof the issue asks for, on the shipped protocol and its fixed seed: the oracle is flat,
    oracle-no-ask breaks at the user step (success), oracle-reckless at the reversibility step
    (dq), oracle-no-priority at the ordering step (success)."""
    import topoeval

    res = topoeval.run_protocol("wiki_to_travel_ladder", ["oracle", "oracle-no-ask", "oracle-reckless",
                                                         "oracle-no-priority"], tmp_path / "r", shots=[0])
    ladders = {e["model"]: e["metrics"] for e in res.summary["ladder"]}
    assert [p["axis"] for p in ladders["oracle"]["success"]["curve"]] == [
        None, "schema", "state", "user", "reversibility", "ordering"]
    for metric in ("success", "dq", "clarification", "priority", "risk", "efficiency"):
        assert ladders["oracle"][metric]["shape"] == "flat", metric
    assert (ladders["oracle-no-ask"]["success"]["shape"], ladders["oracle-no-ask"]["success"]["breaking_axis"]) == (
        "cliff at user", "user")
    assert (ladders["oracle-reckless"]["dq"]["shape"], ladders["oracle-reckless"]["dq"]["breaking_axis"]) == (
        "cliff at reversibility", "reversibility")
    assert ladders["oracle-reckless"]["success"]["shape"] == "flat"  # reckless still books the right flight
    assert ladders["oracle-no-priority"]["success"]["shape"] == "cliff at ordering"
    assert (tmp_path / "r" / "plot_ladder.png").stat().st_size > 10_000
