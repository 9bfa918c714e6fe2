"""Paired flips, McNemar's exact test (against scipy's binomial test), the paired bootstrap and the verdict."""

import pytest
from scipy.stats import binomtest

from topoeval.analysis.paired import (
    PAIRED_ALPHA,
    compare_cell,
    compare_flips,
    compare_models,
    mcnemar_exact,
    paired_bootstrap_ci,
    paired_verdict,
    task_flips,
)
from topoeval.analysis.stats import bootstrap_ci


def test_flips_split_tasks_by_direction_and_never_pair_a_task_missing_on_one_side():
    a = {"t1": 0, "t2": 1, "t3": 1, "t4": 0, "t5": 1}
    b = {"t1": 1, "t2": 0, "t3": 1, "t4": 0, "t6": 1}
    f = task_flips(a, b)
    assert (f.up, f.down, f.both, f.neither) == (["t1"], ["t2"], ["t3"], ["t4"])
    assert f.only_a == ["t5"] and f.only_b == ["t6"] and f.n_pairs == 4


def test_with_k_samples_a_task_flips_up_when_b_pass_rate_is_above_a_s():
    a = {"t1": {0: 1.0, 1: 0.0, 2: 0.0}, "t2": {0: 1.0, 1: 1.0, 2: 0.0}, "t3": {0: 1.0, 1: 0.0, 2: 1.0}}
    b = {"t1": {0: 1.0, 1: 1.0, 2: 0.0}, "t2": {0: 0.0, 1: 0.0, 2: 1.0}, "t3": {0: 0.0, 1: 1.0, 2: 1.0}}
    f = task_flips(a, b)
    assert f.up == ["t1"] and f.down == ["t2"] and f.tied == ["t3"] and f.n_pairs == 3
    assert task_flips({"x": 0.25}, {"x": 0.75}).up == ["x"]  # rates given directly


@pytest.mark.parametrize("up,down", [(8, 0), (0, 8), (3, 1), (10, 2), (5, 5), (1, 0), (0, 1), (17, 6), (40, 25),
                                     (2, 9), (100, 70)])
def test_mcnemar_exact_is_scipy_s_two_sided_binomial_test_on_the_discordant_pairs(up, down):
    assert mcnemar_exact(up, down) == pytest.approx(binomtest(up, up + down, 0.5).pvalue, rel=1e-12)


def test_mcnemar_exact_is_one_with_no_discordant_pair_and_refuses_negative_counts():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(8, 0) == pytest.approx(2 / 2**8)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_the_paired_bootstrap_resamples_the_per_task_differences_with_the_seeded_bootstrap():
    diffs = [1.0, 0.0, 0.5, -0.5, 1.0, 0.0, 0.25]
    assert paired_bootstrap_ci(diffs) == bootstrap_ci(diffs) == paired_bootstrap_ci(diffs)
    assert paired_bootstrap_ci([0.3]) is None


def test_the_verdict_needs_p_under_alpha_and_a_direction():
    assert PAIRED_ALPHA == 0.05
    assert paired_verdict(8, 0) == "b_better" and paired_verdict(0, 8) == "a_better"
    assert paired_verdict(4, 1) == "tie"  # p = 0.375
    assert paired_verdict(0, 0) == "tie"


def _cell(success: dict[str, float], dq: dict[str, float] | None = None) -> dict:
    values = {"success": {t: {0: v} for t, v in success.items()}}
    if dq is not None:
        values["dq"] = {t: {0: v} for t, v in dq.items()}
    return values


def test_a_tie_under_the_independent_rule_is_decisive_paired_when_8_of_12_tasks_flip_up_and_none_down():
    """A (sft) solves 2 of 12 tasks, B (grpo) the same 2 and 8 more: 8 up, 0 down, p = 2/256: grpo better."""
    a = {f"t{i}": 1.0 if i < 2 else 0.0 for i in range(12)}
    b = {f"t{i}": 1.0 if i < 10 else 0.0 for i in range(12)}
    cell = compare_cell(_cell(a), _cell(b), "0-shot", "wiki", "sft", "grpo")
    assert cell.n_up == 8 and cell.n_down == 0 and cell.flips.up == [f"t{i}" for i in range(2, 10)]
    assert cell.mcnemar_p == pytest.approx(2 / 256) and cell.verdict == "b_better"
    assert cell.success.diff == pytest.approx(8 / 12) and cell.success.ci95[0] > 0
    assert "8 up, 0 down of 12 tasks" in cell.sentence and cell.sentence.endswith("grpo better")


def test_overlapping_independent_cis_a_tie_while_the_paired_test_is_decisive():
    """40 tasks: A solves 17, B the same 17 and 6 more (no task lost). Unpaired, 0.425 against 0.575 is a tie
    (two standard errors of ~0.079 each: margin ~0.159 > 0.15) and the two bootstrap CIs overlap; paired, 6 up
    and 0 down is p = 2/64 = 0.031: B better."""
    a = {f"t{i:02}": 1.0 if i < 17 else 0.0 for i in range(40)}
    b = {f"t{i:02}": 1.0 if i < 23 else 0.0 for i in range(40)}
    cell = compare_cell(_cell(a), _cell(b), "0-shot", "wiki")
    ci_a, ci_b = bootstrap_ci(list(a.values())), bootstrap_ci(list(b.values()))
    assert ci_a[1] > ci_b[0]  # the independent intervals overlap
    assert cell.independent_tie is True
    assert cell.n_up == 6 and cell.n_down == 0 and cell.mcnemar_p == pytest.approx(2 / 64)
    assert cell.verdict == "b_better"


def test_dq_is_differenced_over_the_tasks_where_it_applies_on_both_sides():
    success = {"t1": 1.0, "t2": 0.0, "t3": 1.0}
    cell = compare_cell(_cell(success, {"t1": 0.5, "t2": 0.2, "t3": 0.9}), _cell(success, {"t1": 0.7, "t3": 0.9}),
                        "0-shot", "x")
    assert cell.quality["dq"].n == 2 and cell.quality["dq"].diff == pytest.approx(0.1)
    assert cell.quality["dq"].mean_a == pytest.approx(0.7) and cell.quality["dq"].mean_b == pytest.approx(0.8)
    assert cell.quality["risk"].n == 0 and cell.quality["risk"].diff is None
    assert cell.verdict == "tie" and cell.mcnemar_p == 1.0


def _record(model, topology, task, sample, success, status="done", baseline="0-shot"):
    return {"model": model, "baseline": baseline, "topology": topology, "task_id": task, "sample": sample,
            "status": status, "scores": {"success": success, "dq": 0.5 * success, "risk": None}}


def test_compare_models_pairs_two_models_of_one_run_and_lists_cells_only_one_has():
    records = [_record("a", "wiki", f"t{i}", 0, 0.0) for i in range(6)]
    records += [_record("b", "wiki", f"t{i}", 0, 1.0) for i in range(6)]
    records += [_record("a", "travel", "t0", 0, 1.0), _record("b", "wiki", "t9", 0, 1.0, status="error")]
    cmp = compare_models(records, "a", records, "b")
    (cell,) = cmp.cells
    assert cell.topology == "wiki" and cell.n_up == 6 and cell.flips.only_b == []  # the error is not scored
    assert cell.mcnemar_p == pytest.approx(2 / 64) and cell.verdict == "b_better"
    assert cell.quality["dq"].diff == pytest.approx(0.5) and cell.quality["risk"].n == 0
    assert cmp.only_a == [["0-shot", "travel"]] and cmp.only_b == []
    assert "McNemar" in cmp.rule


def test_compare_flips_gives_the_flips_mcnemar_p_and_verdict_of_two_rate_maps():
    result = compare_flips({f"t{i}": 0.0 for i in range(8)}, {f"t{i}": 1.0 for i in range(8)})
    assert result.n_up == 8 and result.p == pytest.approx(2 / 256) and result.verdict == "b_better"
    assert result.rule.startswith("paired")


def test_mcnemar_is_exact_and_fast_for_thousands_of_flips():
    """The viewer asks for p on cells of thousands of tasks: the running binomial coefficient gives the exact
    tail (the same float as the sum of math.comb terms) and agrees with scipy."""
    from fractions import Fraction
    from math import comb

    for up, down in [(1200, 1300), (1250, 1250), (0, 2500), (7, 2000), (40, 61)]:
        n = up + down
        exact = float(min(Fraction(1), 2 * Fraction(sum(comb(n, i) for i in range(min(up, down) + 1)), 2**n)))
        assert mcnemar_exact(up, down) == exact
        assert mcnemar_exact(up, down) == pytest.approx(binomtest(up, n, 0.5).pvalue, rel=1e-9, abs=1e-300)
