"""The shape of a transfer-over-training curve, named from its numbers: the peak, "peaked early" by the tie
rule, and the ID–OOD correlation (undefined below 3 points or on a constant curve)."""

import pytest

from topoeval.analysis.sweep_shape import correlation, curve_shape, sweep_shapes


def _series(means, se=0.0):
    return [{"step": 10 * i, "mean": m, "std": 0.0, "se": se} for i, m in enumerate(means)]


def test_an_end_below_the_peak_by_more_than_the_tie_rule_peaked_early():
    shape = curve_shape("travel", "ood", "success", _series([0.2, 0.8, 0.3], se=0.05))
    assert shape["peaked_early"] and shape["peak_step"] == 10 and shape["tie_margin"] == pytest.approx(0.1)
    assert shape["sentence"] == ("travel (ood) success peaked early at step 10 (0.80) and ended at 0.30 at step 20, "
                                 "below the peak by 0.50, more than the tie rule's margin (0.10).")


def test_an_end_within_the_tie_rule_of_the_peak_is_not_early():
    shape = curve_shape("wiki", "id", "dq", _series([0.2, 0.8, 0.7], se=0.1))
    assert not shape["peaked_early"] and "ties the peak under the tie rule (margin 0.20)" in shape["sentence"]
    rising = curve_shape("wiki", "id", "dq", _series([0.1, 0.5, 0.9]))
    assert not rising["peaked_early"] and rising["sentence"].endswith("to its peak 0.90 at the last step, 20.")
    flat = curve_shape("wiki", "id", "dq", _series([0.0, 0.0]))
    assert flat["sentence"] == "wiki (id) dq stayed at 0.00 at every step (2 checkpoints)."
    assert curve_shape("wiki", "id", "dq", [{"step": 0, "mean": None}]) is None


def test_correlation_is_pearson_and_spearman_with_n():
    corr = correlation(_series([0.1, 0.4, 0.5, 0.9]), _series([0.0, 0.2, 0.1, 0.6]))
    assert corr["n"] == 4 and corr["reason"] is None
    assert corr["pearson"] == pytest.approx(0.9302, abs=1e-4) and corr["spearman"] == pytest.approx(0.8)


@pytest.mark.parametrize(("ood", "reason"), [
    ([0.0, 0.5], "fewer than 3 steps with both means (n = 2)"),
    ([0.2, 0.2, 0.2], "this curve is constant over the steps"),
])
def test_correlation_is_undefined_with_a_reason(ood, reason):
    corr = correlation(_series([0.1, 0.4, 0.5][: len(ood)]), _series(ood))
    assert corr["pearson"] is None and corr["spearman"] is None and corr["reason"] == reason


def test_every_ood_curve_is_set_against_the_id_curve():
    curves = [{"topology": "wiki", "role": "id", "success": _series([0.1, 0.5, 0.9]), "dq": _series([0.1, 0.5, 0.9])},
              {"topology": "travel", "role": "ood", "success": _series([0.0, 0.4, 0.1]), "dq": _series([0, 0, 0])}]
    out = sweep_shapes(curves)
    assert len(out["shapes"]) == 4 and [(c["topology"], c["metric"]) for c in out["correlations"]] == [
        ("travel", "success"), ("travel", "dq")]
    assert out["correlations"][0]["sentence"].startswith(
        "travel (ood) success against wiki (id) success over the steps: Pearson r = ")
    assert "correlation undefined, this curve is constant" in out["correlations"][1]["sentence"]
