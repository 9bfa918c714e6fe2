"""pass@k, pass^k, bootstrap CI and ties against hand-computed values."""

import pytest

from topoeval.analysis.stats import bootstrap_ci, mark_ties, metric_stats, pass_at_k, pass_hat_k


@pytest.mark.parametrize(
    "n,c,k,expected",
    [(5, 0, 1, 0.0), (5, 5, 3, 1.0), (5, 2, 1, 0.4), (5, 2, 2, 1 - 3 / 10), (5, 1, 3, 1 - 4 / 10), (4, 2, 3, 1.0),
     (10, 3, 5, 1 - 21 / 252)],
)
def test_pass_at_k(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    "n,c,k,expected",
    [(5, 0, 1, 0.0), (5, 5, 3, 1.0), (5, 2, 1, 0.4), (5, 2, 2, 1 / 10), (5, 3, 2, 3 / 10), (5, 4, 3, 4 / 10), (4, 2, 3, 0.0)],
)
def test_pass_hat_k(n, c, k, expected):
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_metric_stats_vectors():
    # 3 tasks x 2 samples: task a succeeds twice, b once, c never
    data = {"a": {0: 1.0, 1: 1.0}, "b": {0: 1.0, 1: 0.0}, "c": {0: 0.0, 1: 0.0}}
    s = metric_stats(data, with_pass=True)
    assert s["mean"] == pytest.approx(0.5) and s["n"] == 3
    # per-sample means 2/3 and 1/3 -> sample std of (2/3, 1/3)
    assert s["std"] == pytest.approx(0.2357, abs=1e-4)
    assert s["pass@k"]["1"] == pytest.approx(0.5) and s["pass@k"]["2"] == pytest.approx((1 + 1 + 0) / 3)
    assert s["pass^k"]["1"] == pytest.approx(0.5) and s["pass^k"]["2"] == pytest.approx((1 + 0 + 0) / 3)
    lo, hi = s["ci95"]
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    assert s["se"] == pytest.approx(0.5 / 3 ** 0.5)  # per-task means 1, .5, 0: std .5, over sqrt(3)
    assert metric_stats({}) == {"mean": None, "std": None, "ci95": None, "n": 0}


def test_bootstrap_ci_is_seeded_and_sane():
    values = [1.0] * 30 + [0.0] * 20
    a, b = bootstrap_ci(values), bootstrap_ci(values)
    assert a == b and a[0] < 0.6 < a[1] and a[1] - a[0] < 0.35
    assert bootstrap_ci([1.0]) is None and bootstrap_ci([0.5, 0.5]) == [0.5, 0.5]


def test_ties_within_twice_the_larger_std():
    def cell(model, topo, mean, std):
        return {"model": model, "baseline": "0-shot", "topology": topo, "metrics": {"success": {"mean": mean, "std": std}}}

    cells = [cell("a", "x", 0.50, 0.05), cell("b", "x", 0.58, 0.01), cell("c", "x", 0.70, 0.02), cell("d", "y", 0.5, 0.05)]
    mark_ties(cells)
    assert cells[0]["ties"] == ["b/0-shot"]  # |0.08| < 2 x 0.05
    assert cells[1]["ties"] == ["a/0-shot"]
    assert cells[2]["ties"] == []            # 0.12 >= 2 x 0.05 and 0.20 >= 2 x 0.02
    assert cells[3]["ties"] == []            # other topology


def test_one_tie_rule_for_compare_the_headline_and_the_leaderboard():
    """Two one-sample cells (std 0) 0.10 apart with standard errors 0.08: a tie everywhere (2 x 0.08 >
    0.10), and 0.20 apart: a tie nowhere. Before, compare (std only) and the leaderboard (std or se)
    disagreed on the first."""
    from topoeval.publish.card import leaderboard
    from topoeval.report.headline import build_headline

    def verdicts(gap: float) -> tuple[bool, bool, bool]:
        stats = [{"mean": 0.6, "std": 0.0, "se": 0.08, "ci95": None, "n": 20},
                 {"mean": 0.6 - gap, "std": 0.0, "se": 0.08, "ci95": None, "n": 20}]
        cells = [{"model": "m", "baseline": "0-shot", "topology": t, "role": r, "metrics": {"success": s}}
                 for t, r, s in (("a", "id", stats[0]), ("b", "ood", stats[1]))]
        compared = [{**c, "topology": "a"} for c in cells]
        mark_ties(compared)
        summary = {"cells": cells, "collapse": [{"model": "m", "baseline": "0-shot", "S_id": 0.6, "gap": {"b": gap}}]}
        flat = build_headline(summary)[0]["shape"] == "b: flat"
        rows = [{"protocol": "p", "model": m, "baseline": "0-shot", "task_set_sha256": "t" * 64, "role": "ood",
                 "metric": "success", "n": 20, "reproduce": "", "protocol_sha256": "p" * 64, **s}
                for m, s in (("m1", stats[0]), ("m2", stats[1]))]
        board_tie = bool(leaderboard(rows)["p"][1].get("tie"))
        return bool(compared[0]["ties"]), flat, board_tie

    assert verdicts(0.10) == (True, True, True)
    assert verdicts(0.20) == (False, False, False)


def test_the_bootstrap_draws_in_bounded_batches_with_the_same_ci(monkeypatch):
    """A cell of many tasks never holds every resample at once, and the CI is the unbatched one to the bit."""
    import random

    import numpy as np
    from scipy import stats as scipy_stats

    from topoeval.analysis import stats

    rnd = random.Random(3)
    values = [rnd.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(3001)]
    batches = []
    real = scipy_stats.bootstrap
    monkeypatch.setattr(scipy_stats, "bootstrap", lambda *a, **k: (batches.append(k.get("batch")), real(*a, **k))[1])
    monkeypatch.setattr(stats, "BOOTSTRAP_VALUES", 3001 * 40)
    batched = stats.bootstrap_ci(values)
    assert batches == [40]
    whole = real((np.asarray(values),), np.mean, confidence_level=0.95, n_resamples=stats.BOOTSTRAP_RESAMPLES,
                 method="percentile", random_state=np.random.default_rng(stats.BOOTSTRAP_SEED), vectorized=True)
    assert batched == [float(whole.confidence_interval.low), float(whole.confidence_interval.high)]
