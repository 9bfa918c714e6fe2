"""The transfer matrix (summary.json's ``matrix``): own-topology scores, transfer ratios undefined over
noise, the loss attributed to topology axes; and the shipped ``transfer_matrix`` run by the reference
policies gives the expected pattern (oracle 1 everywhere, noop 0, each flawed oracle loses exactly where
its missing skill is needed)."""

import json

import pytest

import topoeval
from topoeval.analysis.matrix import attribute_axes, build_matrix, combine_matrices
from topoeval.analysis.stats import metric_stats

AXES = ("state", "user", "format")


def cell(model, topo, successes, dq=None):
    per_task = {f"t{i}": {0: float(v)} for i, v in enumerate(successes)}
    metrics = {"success": metric_stats(per_task, True)}
    if dq is not None:
        metrics["dq"] = metric_stats({f"t{i}": {0: float(v)} for i, v in enumerate(dq)})
    return {"model": model, "baseline": "0-shot", "topology": topo, "role": "matrix", "metrics": metrics,
            "diagnostics": {"samples": 1}}


def record(trains, axes=None):
    axes = axes or {"a": {"state": "stateless", "user": "none", "format": "own"},
                    "b": {"state": "stateful", "user": "none", "format": "own"},
                    "c": {"state": "stateful", "user": "hidden_slots", "format": "own"}}
    return {"topologies": list(axes), "axes": axes,
            "train_topologies": {m: {"topology": t, "source": "--trained-on"} if t else
                                 {"topology": None, "source": None, "why": "not an adapter"} for m, t in trains.items()}}


def test_rows_mark_the_own_topology_and_ratios_to_every_other():
    cells = [cell("m", "a", [1, 1, 1, 1, 0, 1, 1, 1]), cell("m", "b", [1, 0, 1, 0, 1, 0, 1, 0]),
             cell("m", "c", [0] * 8), cell("base", "a", [0] * 8), cell("base", "b", [1] * 8), cell("base", "c", [0] * 8)]
    matrix = build_matrix(cells, record({"m": "a", "base": None}))
    m, base = matrix["rows"]
    assert m["train_topology"] == "a" and m["own"]["success"] == 0.875
    assert m["transfer_ratio"]["success"] == {"b": pytest.approx(0.5 / 0.875), "c": 0.0}
    assert m["loss"]["success"] == {"b": pytest.approx(0.375), "c": 0.875}
    assert m["cells"]["b"]["success"]["n"] == 8 and m["cells"]["b"]["success"]["ci95"] is not None
    assert "a" not in m["transfer_ratio"]["success"]  # the diagonal is the own score, not a ratio
    # a model trained on none of the topologies: no diagonal, no ratio, and the reason
    assert base["train_topology"] is None and base["own"]["success"] is None
    assert base["transfer_ratio"]["success"] == {} and base["nulls"]["train_topology"] == "not an adapter"


def test_a_ratio_over_an_own_score_that_ties_with_0_is_undefined_with_its_reason():
    # the case: a random policy's own score 0.01 (1 of 100 tasks) and 0.03 elsewhere: "ratio 3.00"
    cells = [cell("random", "a", [1] + [0] * 99), cell("random", "b", [1, 1, 1] + [0] * 97), cell("random", "c", [0])]
    row = build_matrix(cells, record({"random": "a"}))["rows"][0]
    assert row["own"]["success"] == 0.01
    assert row["transfer_ratio"]["success"]["b"] is None
    assert row["nulls"]["transfer_ratio.success.b"].startswith(
        "the own-topology success (a) 0.01 ties with 0 under the tie rule (margin 0.02): the transfer ratio is "
        "undefined")
    # an own score exactly 0: undefined too; one clear of 0 (no noise at all): defined
    zero = build_matrix([cell("z", "a", [0] * 5), cell("z", "b", [1] * 5)], record({"z": "a"}))["rows"][0]
    assert zero["nulls"]["transfer_ratio.success.b"] == "the own-topology success (a) is 0: the transfer ratio is undefined"
    clear = build_matrix([cell("o", "a", [1] * 5), cell("o", "b", [1] * 5)], record({"o": "a"}))["rows"][0]
    assert clear["transfer_ratio"]["success"]["b"] == 1.0 and "transfer_ratio.success.b" not in clear["nulls"]
    assert clear["nulls"]["transfer_ratio.success.c"] == "no scored episode of this model on c gives success a value"


def test_collapse_ratios_and_recoveries_go_through_the_same_rule():
    from topoeval.analysis.collapse import build_collapse

    def one_way(model, baseline, id_values, ood_values):
        return [{**cell(model, "id", id_values), "role": "id", "baseline": baseline},
                {**cell(model, "ood", ood_values), "role": "ood", "baseline": baseline}]

    cells = one_way("random", "0-shot", [1] + [0] * 99, [1, 1, 1] + [0] * 97)
    cells += one_way("random", "2-shot", [1] + [0] * 99, [1, 1, 1, 1] + [0] * 96)
    zero, two = build_collapse(cells)
    assert zero["transfer_ratio"]["ood"] is None
    assert "ties with 0 under the tie rule" in zero["nulls"]["transfer_ratio.ood"]
    assert two["fewshot_recovery"]["ood"] is None  # the zero-shot gap (-0.02) is noise too
    assert "the zero-shot gap -0.02 ties with 0" in two["nulls"]["fewshot_recovery.ood"]


def test_nnls_attribution_recovers_the_loss_of_each_axis_it_can_identify():
    # three models trained on a, b, c; the loss of a pair is 0.3 per differing state, 0.5 per differing user
    axes = {"a": {"state": "stateless", "user": "none", "format": "own"},
            "b": {"state": "stateful", "user": "none", "format": "own"},
            "c": {"state": "stateful", "user": "hidden_slots", "format": "own"},
            "d": {"state": "stateless", "user": "none", "format": "hermes"}}
    loss = {"state": 0.3, "user": 0.5, "format": 0.1}
    cells = []
    for model, train in (("ma", "a"), ("mb", "b"), ("mc", "c")):
        for topo in axes:
            drop = sum(w for ax, w in loss.items() if axes[train][ax] != axes[topo][ax])
            cells.append(cell(model, topo, [1.0] * 10 if topo == train else [1.0] * round(10 * (1 - drop))
                              + [0.0] * round(10 * drop)))
    matrix = build_matrix(cells, record({"ma": "a", "mb": "b", "mc": "c"}, axes))
    fit = matrix["attribution"]["0-shot"]
    assert fit["method"] == "nnls" and fit["n_pairs"] == 9 and not fit["under_determined"]
    assert {a: round(v["loss"], 6) for a, v in fit["axes"].items()} == loss
    assert fit["axes"]["user"]["n_pairs"] == 5 and fit["caveat"] is None


def test_axes_that_always_move_together_are_one_row_of_the_fit_with_their_loss_together():
    axes = {"a": {"state": "stateless", "user": "none"}, "b": {"state": "stateful", "user": "hidden_slots"}}
    rows = [{"train_topology": "a", "loss": {"success": {"b": 0.4}}, "transfer_ratio": {"success": {"b": 0.6}}}]
    fit = attribute_axes(rows, axes)
    assert fit["confounded"] == [["state", "user"]] and not fit["under_determined"] and fit["rank"] == 1
    assert fit["axes"] == {"state + user": {"loss": pytest.approx(0.4), "n_pairs": 1, "axes": ["state", "user"],
                                            "separable": False, "marginal": None}}  # one row, not split
    assert fit["caveat"] is None
    # no model with a train topology: nothing to fit, and it says so
    assert attribute_axes([], axes)["caveat"].startswith("no pair to fit")


def test_compare_combines_runs_rows_labelled_by_run():
    one = build_matrix([cell("m", "a", [1] * 4), cell("m", "b", [0] * 4)], record({"m": "a"},
                       {"a": {"state": "stateless"}, "b": {"state": "stateful"}}))
    combined = combine_matrices([("run1", one), ("run2", one), ("run3", None)])
    assert [r["model"] for r in combined["rows"]] == ["m (run1)", "m (run2)"]
    assert combined["attribution"]["0-shot"]["n_pairs"] == 2
    assert combine_matrices([("x", None)]) is None


#: each flawed oracle's missing skill: the dimension it breaks
FLAWS = {"oracle-no-ask": "clarification", "oracle-reckless": "risk", "oracle-serial": "parallelism",
         "oracle-no-priority": "priority", "oracle-redundant": "efficiency"}


def needs(flaw, oracle_cell, axes):
    """Whether a topology's tasks need the flawed oracle's skill: its dimension applies there (the oracle's
    cell scores it), and for a commit without confirmation, a user who must confirm."""
    applies = (oracle_cell["metrics"].get(FLAWS[flaw]) or {}).get("n", 0) > 0
    return applies and (flaw != "oracle-reckless" or axes["user"] == "hidden_slots")


@pytest.fixture(scope="module")
def reference_matrix(tmp_path_factory):
    models = ["oracle", "noop", "random", *FLAWS]
    return topoeval.run_protocol("transfer_matrix", models, tmp_path_factory.mktemp("matrix") / "run", tasks=3,
                                 trained_on=["oracle=wiki", "oracle-no-ask=travel"])


@pytest.mark.slow
def test_the_reference_policies_give_the_expected_pattern_on_the_shipped_matrix(reference_matrix):
    result = reference_matrix
    matrix = result.summary["matrix"]
    assert matrix["topologies"] == ["wiki", "wiki-hermes", "travel", "bfcl", "agentdojo-workspace", "git"]
    rows = {r["model"]: r for r in matrix["rows"]}
    cells = {(c["model"], c["topology"]): c for c in result.cells}
    for topo in matrix["topologies"]:
        assert rows["oracle"]["cells"][topo]["success"]["mean"] == 1.0 == rows["oracle"]["cells"][topo]["dq"]["mean"]
        assert rows["noop"]["cells"][topo]["success"]["mean"] == 0.0
    exercised = set()
    for flaw, dim in FLAWS.items():
        for topo in matrix["topologies"]:
            mine, oracle = cells[(flaw, topo)]["metrics"], cells[("oracle", topo)]["metrics"]
            falls = (mine.get(dim) or {}).get("mean") is not None and mine[dim]["mean"] <= oracle[dim]["mean"] - 0.3
            assert falls == needs(flaw, cells[("oracle", topo)], matrix["axes"][topo]), (flaw, topo)
            exercised |= {flaw} if falls else set()
            for other in FLAWS.values():  # every other dimension as good as the oracle's
                if other != dim and (oracle.get(other) or {}).get("mean") is not None:
                    assert mine[other]["mean"] == oracle[other]["mean"], (flaw, topo, other)
    assert exercised == set(FLAWS)  # each flaw is seen to cost on some topology at this size
    # the diagonal: --trained-on, recorded in run.json; travel is oracle-no-ask's own, wiki is oracle's
    run = json.loads((result.run_dir / "run.json").read_text())
    assert run["matrix"]["train_topologies"]["oracle-no-ask"] == {"topology": "travel", "source": "--trained-on"}
    assert rows["oracle"]["train_topology"] == "wiki" and rows["oracle"]["transfer_ratio"]["success"]["git"] == 1.0
    assert rows["noop"]["train_topology"] is None and rows["noop"]["transfer_ratio"]["success"] == {}
    no_ask = rows["oracle-no-ask"]  # own score on travel below 1: each other ratio above 1, or undefined over noise
    assert no_ask["own"]["success"] < 1
    for topo, ratio in no_ask["transfer_ratio"]["success"].items():
        assert ratio > 1 if ratio is not None else "ties with 0" in no_ask["nulls"][f"transfer_ratio.success.{topo}"]
    rows_of_axes = matrix["attribution"]["0-shot"]["axes"]  # a row is one axis, or a group that moves together
    assert {a for v in rows_of_axes.values() for a in v["axes"]} <= {"state", "reversibility", "user", "ordering",
                                                                     "dependency", "schema", "answer_channel",
                                                                     "instructions", "format"}
    assert all(name == " + ".join(v["axes"]) for name, v in rows_of_axes.items())
    assert matrix["axes"]["wiki-hermes"] == {**matrix["axes"]["wiki"], "format": "hermes"}
    assert (result.run_dir / "matrix.png").is_file()
    assert result.summary["collapse"] == []  # no ID/OOD roles: the matrix is the collapse


@pytest.mark.slow
def test_a_matrix_run_resumes_without_running_a_finished_episode_again(reference_matrix):
    again = topoeval.run_protocol("transfer_matrix", ["oracle", "noop"], reference_matrix.run_dir, tasks=3)
    assert again.new_episodes == 0 and again.reused_episodes == 2 * 6 * 3
    # the models named before keep their recorded train topology
    assert json.loads((again.run_dir / "run.json").read_text())["matrix"]["train_topologies"]["oracle"]["topology"] \
        == "wiki"
