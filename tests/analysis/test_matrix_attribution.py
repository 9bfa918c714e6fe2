"""The transfer matrix's axis attribution (:func:`topoeval.analysis.matrix.attribute_axes`) at the edges its
other tests (tests/analysis/test_matrix.py) do not reach: a fit that is under-determined although no two
axes move together, and pairs whose transfer ratio is undefined (an own score that ties with 0) kept out
of the fit."""

import pytest

from topoeval.analysis.matrix import attribute_axes, build_matrix
from topoeval.analysis.stats import metric_stats


def cell(model, topo, successes):
    per_task = {f"t{i}": {0: float(v)} for i, v in enumerate(successes)}
    return {"model": model, "baseline": "0-shot", "topology": topo, "role": "matrix",
            "metrics": {"success": metric_stats(per_task, True)}, "diagnostics": {"samples": 1}}


def record(trains, axes):
    return {"topologies": list(axes), "axes": axes,
            "train_topologies": {m: {"topology": t, "source": "--trained-on"} for m, t in trains.items()}}


def pair_row(train, losses):
    """A matrix row trained on ``train`` whose every pair has a defined ratio and the given losses."""
    return {"train_topology": train, "loss": {"success": dict(losses)},
            "transfer_ratio": {"success": {t: 1.0 - loss for t, loss in losses.items()}}}


#: three axes; b differs from a in state and format, c in user and format: no two axes differ in exactly the
#: same pairs, yet two pairs cannot identify three weights
THREE_AXES = {"a": {"state": "stateless", "user": "none", "format": "own"},
              "b": {"state": "stateful", "user": "none", "format": "hermes"},
              "c": {"state": "stateless", "user": "hidden_slots", "format": "hermes"}}


def test_a_fit_with_fewer_independent_pairs_than_axes_is_under_determined_without_confounded_axes():
    fit = attribute_axes([pair_row("a", {"b": 0.5, "c": 0.4})], THREE_AXES)
    assert fit["n_pairs"] == 2 and set(fit["axes"]) == {"state", "user", "format"}
    assert fit["confounded"] == []  # no two axes move together ...
    assert fit["rank"] == 2 and fit["under_determined"] is True  # ... but 3 axes over rank 2
    assert fit["caveat"] == ("under-determined: 3 axes differ but the 2 pairs have rank 2: the fit splits their "
                             "loss arbitrarily; read the sums of such groups, not the parts")


def test_the_same_axes_with_a_third_independent_pair_are_determined():
    axes = {**THREE_AXES, "d": {"state": "stateful", "user": "none", "format": "own"}}  # state alone differs
    fit = attribute_axes([pair_row("a", {"b": 0.5, "c": 0.4, "d": 0.3})], axes)
    assert fit["rank"] == 3 and fit["under_determined"] is False and fit["caveat"] is None
    assert {a: round(v["loss"], 9) for a, v in fit["axes"].items()} == {"state": 0.3, "user": 0.2, "format": 0.2}


def test_axes_that_move_together_are_one_confounded_row_and_the_fit_is_determined():
    axes = {"a": {"state": "stateless", "user": "none"}, "b": {"state": "stateful", "user": "hidden_slots"}}
    fit = attribute_axes([pair_row("a", {"b": 0.4})], axes)
    assert fit["confounded"] == [["state", "user"]] and not fit["under_determined"] and fit["rank"] == 1
    assert list(fit["axes"]) == ["state + user"] and fit["axes"]["state + user"]["separable"] is False
    assert fit["axes"]["state + user"]["loss"] == pytest.approx(0.4) and fit["caveat"] is None


def test_a_group_that_moves_together_and_too_few_pairs_is_under_determined_counting_rows_and_axes():
    axes = {"a": {"state": "stateless", "user": "none", "format": "own", "schema": "w"},
            "b": {"state": "stateful", "user": "hidden_slots", "format": "hermes", "schema": "w"},
            "c": {"state": "stateless", "user": "none", "format": "hermes", "schema": "t"}}
    fit = attribute_axes([pair_row("a", {"b": 0.5, "c": 0.4})], axes)
    assert list(fit["axes"]) == ["state + user", "format", "schema"] and fit["confounded"] == [["state", "user"]]
    assert fit["rank"] == 2 and fit["under_determined"] is True
    assert fit["caveat"] == ("under-determined: 3 rows (4 axes) differ but the 2 pairs have rank 2: the fit splits "
                             "their loss arbitrarily; read the sums of such groups, not the parts")


TWO = {"a": {"state": "stateless"}, "b": {"state": "stateful"}}


@pytest.mark.parametrize("own,elsewhere", [
    ([1] + [0] * 99, [1, 1, 1] + [0] * 97),  # own 0.01: ties with 0 under the tie rule
    ([0] * 10, [1] * 4 + [0] * 6),  # own exactly 0
])
def test_a_pair_whose_own_score_ties_with_0_is_left_out_of_the_fit(own, elsewhere):
    cells = [cell("clear", "a", [1] * 10), cell("clear", "b", [1] * 6 + [0] * 4),
             cell("noise", "a", own), cell("noise", "b", elsewhere)]
    matrix = build_matrix(cells, record({"clear": "a", "noise": "a"}, TWO))
    noise = next(r for r in matrix["rows"] if r["model"] == "noise")
    assert noise["transfer_ratio"]["success"]["b"] is None and noise["loss"]["success"]["b"] < 0  # loss defined
    fit = matrix["attribution"]["0-shot"]
    assert fit["n_pairs"] == 1  # only the clear model's pair
    assert fit["axes"]["state"]["loss"] == pytest.approx(0.4) and fit["axes"]["state"]["n_pairs"] == 1


def test_only_pairs_with_an_undefined_ratio_leave_nothing_to_fit():
    rows = [{"train_topology": "a", "loss": {"success": {"b": -0.3}}, "transfer_ratio": {"success": {"b": None}}}]
    fit = attribute_axes(rows, TWO)
    assert fit["n_pairs"] == 0 and fit["axes"] == {} and fit["caveat"].startswith("no pair to fit")
