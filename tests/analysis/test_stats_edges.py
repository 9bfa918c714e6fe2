"""topoeval.analysis.stats at its edges: one task, one sample, no cell, equal means, the k of pass@k, the
compensated sum on the interpreters that have it, and the ratio over noise (mutation testing found these
unchecked: docs/development.md)."""

import math

import numpy as np
import pytest

from topoeval.analysis import stats
from topoeval.analysis.stats import (
    Fold,
    MetricFold,
    bootstrap_ci,
    is_tie,
    mark_ties,
    metric_stats,
    ratio_over_noise,
    tie_margin,
)


def test_one_task_has_no_spread_and_no_interval():
    out = metric_stats({"t": {0: 0.25}})
    assert out == {"mean": 0.25, "std": 0.0, "ci95": None, "se": 0.0, "n": 1}


def test_two_tasks_have_the_standard_error_of_their_mean_and_one_sample_no_std():
    out = metric_stats({"a": {0: 0.0}, "b": {0: 1.0}})
    assert out["se"] == pytest.approx(np.std([0.0, 1.0], ddof=1) / math.sqrt(2)) and out["se"] > 0
    assert out["std"] == 0.0  # one sample per task: no spread across samples


def test_pass_at_k_is_reported_only_when_asked_and_for_k_from_1_to_the_samples_every_task_has():
    values = {"a": {0: 1.0, 1: 0.0, 2: 0.0}, "b": {0: 0.0, 1: 1.0}}
    assert "pass@k" not in metric_stats(values) and "pass^k" not in metric_stats(values)
    out = metric_stats(values, with_pass=True)
    assert list(out["pass@k"]) == ["1", "2"] and list(out["pass^k"]) == ["1", "2"]  # b has 2 samples
    assert out["pass@k"]["2"] == pytest.approx((2 / 3 + 1.0) / 2)
    assert out["pass^k"]["1"] == pytest.approx((1 / 3 + 1 / 2) / 2) and out["pass^k"]["2"] == 0.0


def test_a_fold_keeps_counts_by_default_and_says_when_it_cannot_give_pass_at_k():
    fold = MetricFold()
    for task, sample, value in (("a", 0, 1.0), ("a", 1, 0.0), ("b", 0, 1.0), ("b", 1, 1.0)):
        fold.add(task, sample, value)
    assert fold.stats(with_pass=True)["pass@k"] == {"1": 0.75, "2": 1.0}
    lean = MetricFold(counts=False)
    lean.add("a", 0, 1.0)
    assert "pass@k" not in lean.stats()
    with pytest.raises(ValueError, match=r"^pass@k needs a MetricFold\(counts=True\)$"):
        lean.stats(with_pass=True)


def test_a_fold_with_nothing_added_has_no_statistics():
    assert MetricFold().stats(with_pass=True) == {"mean": None, "std": None, "ci95": None, "n": 0}
    assert Fold().mean() is None


def test_a_fold_s_mean_is_its_sum_over_its_count():
    fold = Fold()
    for x in (0.5, 1.0, 0.0, 1.0):
        fold.add(x)
    assert fold.n == 4 and fold.mean() == 0.625


@pytest.mark.parametrize("values,expected", [
    ([0.1] * 10, 1.0),  # a plain left fold gives 0.9999999999999999
    ([1e100, 1.0, -1e100], 1.0),  # the small value lost by the plain fold is kept
    ([1.0, 1e100, 1.0, -1e100], 2.0),  # a value larger than the running total: the other branch
    ([1e308, 1e308], math.inf),  # an overflow stays inf, not nan
])
def test_with_a_compensated_sum_the_fold_gives_what_python_3_12_s_sum_gives(monkeypatch, values, expected):
    # Python 3.12's sum() of floats is Neumaier's compensated sum; the fold follows it there, and here too when
    # told to (this interpreter may be 3.11, whose sum() is a plain left fold)
    monkeypatch.setattr(stats, "NEUMAIER_SUM", True)
    fold = Fold()
    for x in values:
        fold.add(x)
    assert fold.value() == expected
    if stats.sys.version_info >= (3, 12):
        assert sum(values) == expected


def test_without_a_compensated_sum_the_fold_is_a_plain_left_fold(monkeypatch):
    monkeypatch.setattr(stats, "NEUMAIER_SUM", False)
    fold = Fold()
    for x in [0.1] * 10:
        fold.add(x)
    assert fold.value() == 0.9999999999999999


def test_a_narrower_confidence_gives_a_narrower_interval():
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    wide, narrow = bootstrap_ci(values), bootstrap_ci(values, confidence=0.5)
    assert wide[0] < narrow[0] <= narrow[1] < wide[1]


def test_equal_means_are_a_tie_even_without_noise_and_the_margin_itself_is_not():
    assert is_tie(0.0, 0.0) and not is_tie(1.0, 0.0)
    assert not is_tie(0.1, 0.1) and is_tie(0.0999, 0.1) and not is_tie(-0.1, 0.1)
    assert tie_margin() == 0.0 and tie_margin(0.05, {"std": 0.01, "se": 0.1}) == pytest.approx(0.2)


def test_a_cell_without_a_mean_ties_with_nothing():
    cells = [{"model": "m", "baseline": "0-shot", "topology": "t", "metrics": {"success": {"mean": None}}},
             {"model": "n", "baseline": "0-shot", "topology": "t", "metrics": {"success": {"mean": 0.5, "se": 0.1}}}]
    mark_ties(cells)
    assert cells[0]["ties"] == [] and cells[1]["ties"] == []


def test_a_ratio_over_noise_is_the_ratio_or_its_one_reason():
    assert ratio_over_noise(0.3, 0.6, 0.1) == (pytest.approx(0.5), None)
    assert ratio_over_noise(0.3, None, 0.1) == (None, "the denominator is null")
    assert ratio_over_noise(None, 0.6, 0.1) == (None, "the numerator is null")
    assert ratio_over_noise(0.3, 0.0, 0.0) == (None, "the denominator is 0: the ratio is undefined")
    assert ratio_over_noise(0.3, 0.05, 0.1) == (
        None, "the denominator 0.05 ties with 0 under the tie rule (margin 0.1): the ratio is undefined")
    assert ratio_over_noise(0.3, 0.05, 0.01) == (pytest.approx(6.0), None)  # clear of 0: defined
    assert ratio_over_noise(0.3, 0.0, 0.1, "the own score", "the transfer ratio") == (
        None, "the own score is 0: the transfer ratio is undefined")
