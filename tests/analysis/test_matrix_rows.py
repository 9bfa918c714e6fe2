"""The transfer matrix's rows field by field: each cell's point (pass@k and the zero-signal share with k samples,
success only), topologies a record does not name, the train topology's source and reason, the paired section
when the cells' values are given, and `compare`'s union of runs (mutation testing found these unchecked:
docs/development.md)."""

import pytest

from topoeval.analysis.matrix import build_matrix, combine_matrices
from topoeval.analysis.paired import all_cell_values

from .paired_folders import record as episode


def cell(model, topo, mean, samples=1, **extra):
    success = {"mean": mean, "ci95": [mean, mean], "se": 0.0625, "std": 0.125, "n": 8,
               "pass@k": {"1": mean, "2": 1.0}, "pass^k": {"1": mean, "2": 0.0}}
    return {"model": model, "baseline": "0-shot", "topology": topo, "role": "matrix",
            "metrics": {"success": success, "dq": {"mean": 0.5, "ci95": None, "se": 0.0, "std": 0.0, "n": 8}},
            "diagnostics": {"samples": samples, "zero_signal_share": 0.25}, **extra}


RECORD = {"topologies": ["a", "b"], "axes": {"a": {"state": "stateless"}, "b": {"state": "stateful"}},
          "train_topologies": {"m": {"topology": "a", "source": "--trained-on"},
                               "base": {"topology": None, "source": None}}}


def test_a_point_with_k_samples_carries_pass_at_k_and_the_zero_signal_share_for_success_only():
    matrix = build_matrix([cell("m", "a", 0.5, samples=2), cell("m", "b", 0.25, samples=1)], RECORD)
    row, = matrix["rows"]
    assert row["cells"]["a"]["success"] == {"mean": 0.5, "ci95": [0.5, 0.5], "se": 0.0625, "std": 0.125, "n": 8,
                                            "pass@k": {"1": 0.5, "2": 1.0}, "pass^k": {"1": 0.5, "2": 0.0},
                                            "zero_signal_share": 0.25}
    assert row["cells"]["a"]["dq"] == {"mean": 0.5, "ci95": None, "se": 0.0, "std": 0.0, "n": 8}  # not success
    # one sample: no pass@k (it would be pass@1 again)
    assert row["cells"]["b"]["success"] == {"mean": 0.25, "ci95": [0.25, 0.25], "se": 0.0625, "std": 0.125, "n": 8}


def test_a_cell_without_diagnostics_or_without_a_metric_is_one_sample_and_empty():
    bare = cell("m", "a", 0.5)
    del bare["diagnostics"]
    row, = build_matrix([bare], RECORD)["rows"]
    assert "pass@k" not in row["cells"]["a"]["success"]
    assert row["cells"]["b"]["success"] == {"mean": None, "ci95": None, "se": None, "std": None, "n": 0}  # never run


def test_a_topology_the_record_does_not_name_joins_in_first_seen_order_and_each_row_says_its_train_source():
    cells = [cell("m", "a", 0.75), cell("m", "z", 0.5), cell("m", "b", 0.25), cell("base", "y", 0.5)]
    matrix = build_matrix(cells, RECORD)
    assert matrix["topologies"] == ["a", "b", "z", "y"]
    m, base = matrix["rows"]
    assert list(m["cells"]) == ["a", "b", "z", "y"] and m["cells"]["y"]["success"]["mean"] is None
    assert m["train_source"] == "--trained-on" and base["train_source"] is None
    assert m["transfer_ratio"]["success"] == {"b": 0.25 / 0.75, "z": 0.5 / 0.75, "y": None}
    assert base["nulls"] == {"train_topology": "no train topology recorded for this model"}


def test_with_the_cells_values_the_matrix_pairs_each_trained_model_with_its_base():
    records = [episode(m, t, f"t{i}", 0, 1.0 if i < k else 0.0)
               for (m, t), k in {("m", "a"): 4, ("m", "b"): 1, ("base", "a"): 1, ("base", "b"): 1}.items()
               for i in range(4)]
    cells = [cell("m", "a", 1.0), cell("m", "b", 0.25), cell("base", "a", 0.25), cell("base", "b", 0.25)]
    assert "paired" not in build_matrix(cells, RECORD)
    paired = build_matrix(cells, RECORD, values=all_cell_values(records), base_model="base")["paired"]
    assert paired["base"] == "base" and paired["base_source"] == "the protocol's base_model"
    (row,) = paired["rows"]
    assert row["model"] == "m" and [(e["topology"], e["n_up"]) for e in row["topologies"]] == [("a", 3), ("b", 0)]


def test_compare_unites_the_runs_topologies_and_fills_a_missing_one_with_an_empty_cell():
    one = build_matrix([cell("m", "a", 0.75), cell("m", "b", 0.25)], RECORD)
    assert combine_matrices([("r1", one)])["axes"] == RECORD["axes"]
    other = build_matrix([cell("m", "b", 0.5), cell("m", "c", 0.5)],
                         {**RECORD, "topologies": ["b", "c"], "axes": {**RECORD["axes"], "c": {"state": "stateful"}}})
    combined = combine_matrices([("r1", one), ("r2", other)])
    assert combined["topologies"] == ["a", "b", "c"]
    r1, r2 = combined["rows"]
    assert r1["cells"]["c"] == r2["cells"]["a"] == {m: {"mean": None, "ci95": None, "se": None, "std": None, "n": 0}
                                                    for m in ("success", "dq")}
    assert r1["cells"]["a"]["success"]["mean"] == 0.75 and r2["cells"]["c"]["success"]["mean"] == 0.5


def values_of(solved: dict[tuple[str, str, str], int], n: int = 4) -> dict:
    """Cell values: (model, baseline, topology) -> how many of the n tasks it solved."""
    return all_cell_values([episode(m, t, f"t{i}", 0, 1.0 if i < k else 0.0, baseline=b)
                            for (m, b, t), k in solved.items() for i in range(n)])


def test_the_paired_section_names_its_base_and_pairs_each_trained_row_on_its_own_baseline_only():
    from topoeval.analysis.matrix import matrix_vs_base
    from topoeval.analysis.paired import RULE

    rows = [{"model": "base", "baseline": "0-shot", "train_topology": None},
            {"model": "other", "baseline": "0-shot", "train_topology": None},
            {"model": "m", "baseline": "0-shot", "train_topology": "a"},
            {"model": "gone", "baseline": "0-shot", "train_topology": "a"}]  # no values: nothing to pair
    values = values_of({("base", "0-shot", "a"): 1, ("base", "2-shot", "a"): 1, ("other", "0-shot", "a"): 1,
                        ("m", "0-shot", "a"): 4, ("m", "2-shot", "a"): 0})
    paired = matrix_vs_base(values, rows, "base")
    assert set(paired) == {"rule", "base", "base_source", "rows"} and paired["rule"] == RULE
    assert paired["base_source"] == "the protocol's base_model"
    m, gone = paired["rows"]  # the other untrained model is not paired with the base
    assert {k: v for k, v in m.items() if k != "topologies"} == {"model": "m", "baseline": "0-shot",
                                                                 "train_topology": "a"}
    assert [(e["topology"], e["n_up"], e["n_down"]) for e in m["topologies"]] == [("a", 3, 0)]  # 0-shot's only
    assert gone == {"model": "gone", "baseline": "0-shot", "train_topology": "a", "topologies": []}


def test_the_one_untrained_model_is_the_base_even_without_values_and_no_base_is_one_line():
    from topoeval.analysis.matrix import matrix_vs_base
    from topoeval.analysis.paired import RULE

    rows = [{"model": "base", "baseline": "0-shot", "train_topology": None},
            {"model": "m", "baseline": "0-shot", "train_topology": "a"}]
    paired = matrix_vs_base(values_of({("m", "0-shot", "a"): 2}), rows, None)
    assert paired == {"rule": RULE, "base": "base", "base_source": "the run's one model without a train topology",
                      "rows": [{"model": "m", "baseline": "0-shot", "train_topology": "a", "topologies": []}]}
    assert matrix_vs_base({}, rows[1:], None) == {
        "rule": RULE, "base": None, "rows": [],
        "why": "no base: the protocol names no base_model and the run has no model without a train topology"}


def test_an_attribution_with_nothing_to_fit_says_which_in_full():
    from topoeval.analysis.matrix import attribute_axes

    empty = {"metric": "success", "method": "nnls", "n_pairs": 0, "axes": {}, "confounded": [], "rank": 0,
             "under_determined": False}
    assert attribute_axes([], RECORD["axes"]) == {**empty, "caveat": (
        "no pair to fit: no model has a train topology among the matrix's with an own score clear of 0 (the tie rule)")}
    same = {"a": {"state": "stateless"}, "b": {"state": "stateless"}}
    row = {"train_topology": "a", "loss": {"success": {"b": 0.25}}, "transfer_ratio": {"success": {"b": 0.75}}}
    assert attribute_axes([row], same) == {**empty, "n_pairs": 1, "caveat": (
        "no axis differs between any model's train topology and another topology")}


def test_rows_without_a_known_train_topology_or_a_defined_pair_are_skipped_not_the_end_of_the_fit():
    from topoeval.analysis.matrix import attribute_axes

    axes = {"a": {"state": "stateless", "format": "own"}, "b": {"state": "stateful", "format": "own"},
            "c": {"state": "stateless", "format": "hermes"}}
    rows = [{"train_topology": None, "loss": {"success": {}}, "transfer_ratio": {"success": {}}},
            {"train_topology": "elsewhere", "loss": {"success": {"b": 0.5}}, "transfer_ratio": {"success": {"b": 0.5}}},
            {"train_topology": "a", "loss": {"success": {"b": None, "c": 0.25, "x": 0.5, "b2": 0.5}},
             "transfer_ratio": {"success": {"b": None, "c": 0.75, "x": 0.5}}},
            {"train_topology": "a", "loss": {"success": {"b": 0.5, "c": 0.25}},
             "transfer_ratio": {"success": {"b": 0.5, "c": 0.75}}}]
    fit = attribute_axes(rows, axes)
    assert fit["n_pairs"] == 3  # a→c twice, a→b once: the null loss, the unknown topologies and rows left out
    assert fit["axes"]["state"]["loss"] == pytest.approx(0.5) and fit["axes"]["format"]["loss"] == pytest.approx(0.25)
    # marginal: the mean loss where the axis differs minus where it does not
    assert fit["axes"]["state"]["marginal"] == pytest.approx(0.5 - 0.25)
    assert fit["axes"]["format"]["marginal"] == pytest.approx(0.25 - 0.5)


def test_compare_puts_each_design_once_with_the_rows_of_every_run_that_ran_it():
    def effects(model, base):
        return {"method": "ols", "designs": [{"base": base, "plan": "star", "topologies": {base: []},
                                              "rows": [{"model": model, "baseline": "0-shot", "metrics": {}}]}]}

    one = build_matrix([cell("m", "a", 0.75)], RECORD)
    runs = [("r1", {**one, "axis_effects": effects("m", "a")}), ("r2", {**one, "axis_effects": effects("m", "a")}),
            ("r3", {**one, "axis_effects": effects("m", "b")}), ("r4", one)]
    designs = combine_matrices(runs)["axis_effects"]["designs"]
    assert [(d["base"], [r["model"] for r in d["rows"]]) for d in designs] == [("a", ["m (r1)", "m (r2)"]),
                                                                              ("b", ["m (r3)"])]
    assert "axis_effects" not in combine_matrices([("r4", one)])
