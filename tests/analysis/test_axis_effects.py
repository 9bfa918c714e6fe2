"""A designed matrix's loss per move (:mod:`topoeval.analysis.axis_effects`): exact on known scores, paired over
tasks, one row for moves that always come together, "not estimable" where no combination isolates a term, and
undefined (with the reason) when the own score ties with 0 (#58)."""

import pytest

from topoeval.analysis.axis_effects import RESAMPLES, axis_effects, task_key


def tid(topology: str, i: int) -> str:
    """A task id as a suite writes it: the hash differs per topology (its parameters), the index does not."""
    return f"wiki/test/{i}-{abs(hash(topology)) % 16**8:08x}"


def values(scores: dict[str, list[float]], metric: str = "success") -> dict:
    """model 'm' -> its cells: topology -> per-task scores (one sample)."""
    return {"m": {("0-shot", t): {metric: {tid(t, i): {0: float(v)} for i, v in enumerate(s)}}
                  for t, s in scores.items()}}


def design(topologies: dict[str, list[str]], moves: dict[str, str], plan: str = "star") -> list[dict]:
    return [{"base": "b", "plan": plan, "moves": moves, "topologies": topologies}]


def fit_of(effects, metric="success"):
    return effects["designs"][0]["rows"][0]["metrics"][metric]


def test_a_task_is_paired_across_topologies_by_its_split_and_index_not_its_hash():
    assert task_key("travel/test/7-0a1b2c3d") == task_key("travel/test/7-ffffffff") == "travel/test/7"
    assert task_key("git-task-3") == "git-task-3"


def test_a_star_recovers_each_moves_loss_exactly_with_a_paired_interval():
    n = 20
    base = [1.0] * 15 + [0.0] * 5
    scores = {"b": base,
              "b+x": [0.0] * 10 + base[10:],  # x loses tasks 0-9: 0.50
              "b+y": base}  # y loses nothing
    effects = axis_effects(design({"b": [], "b+x": ["x"], "b+y": ["y"]}, {"x": "format", "y": "schema"}),
                           values(scores))
    entry = effects["designs"][0]
    assert entry["rank"] == entry["n_columns"] == 3 and entry["identifiable"] and entry["caveat"] is None
    fit = fit_of(effects)
    assert fit["own"] == 0.75 and fit["n_tasks"] == n and fit["undefined"] is None
    x, y = fit["effects"]["x"], fit["effects"]["y"]
    assert x["loss"] == pytest.approx(0.5) and x["axes"] == ["format"] and x["separable"] and x["estimable"]
    assert x["ci95"][0] < 0.5 < x["ci95"][1]
    assert y == {"terms": ["y"], "axes": ["schema"], "separable": True, "estimable": True, "loss": 0.0,
                 "ci95": [0.0, 0.0], "se": 0.0}  # no noise at all: paired, the base's failures cancel
    assert effects["bootstrap"]["resamples"] == RESAMPLES


def test_the_interval_is_paired_a_task_that_fails_everywhere_adds_no_width():
    hard = [0.0] * 10
    scores = {"b": [1.0] * 10 + hard, "b+x": [1.0] * 5 + [0.0] * 5 + hard}
    paired = fit_of(axis_effects(design({"b": [], "b+x": ["x"]}, {"x": "format"}), values(scores)))["effects"]["x"]
    assert paired["loss"] == pytest.approx(0.25)
    # the per-task difference is 1 on 5 tasks and 0 on 15: its se is that of a 0.25 share over 20 tasks
    assert paired["se"] == pytest.approx((0.25 * 0.75 / 20) ** 0.5, rel=0.15)


def test_moves_that_always_come_together_are_one_row_whose_loss_is_their_sum():
    scores = {"b": [1.0] * 10, "b+x+y": [0.0] * 4 + [1.0] * 6}
    effects = axis_effects(design({"b": [], "b+x+y": ["x", "y"]}, {"x": "format", "y": "schema"}, "half_factorial"),
                           values(scores))
    entry = effects["designs"][0]
    assert entry["confounded"] == [["x", "y"]] and entry["identifiable"]
    assert entry["caveat"] == "not separable in this design: x + y (only each group's sum is measured)"
    fit = fit_of(effects)
    assert list(fit["effects"]) == ["x + y"]
    assert fit["effects"]["x + y"]["loss"] == pytest.approx(0.4) and fit["effects"]["x + y"]["separable"] is False
    assert fit["effects"]["x + y"]["axes"] == ["format", "schema"]


def test_a_half_factorial_of_three_moves_identifies_each_main_effect_under_additivity():
    tops = {"b": [], "b+x+y": ["x", "y"], "b+x+z": ["x", "z"], "b+y+z": ["y", "z"]}
    loss = {"x": 0.2, "y": 0.3, "z": 0.0}
    scores = {t: [1.0 - sum(loss[m] for m in ms)] * 10 for t, ms in tops.items()}
    fit = fit_of(axis_effects(design(tops, {"x": "format", "y": "schema", "z": "user"}, "half_factorial"),
                              values(scores)))
    assert {k: round(e["loss"], 9) for k, e in fit["effects"].items()} == loss


def test_a_term_no_combination_of_the_runs_isolates_is_not_estimable_and_has_no_number():
    tops = {"b": [], "b+x+y": ["x", "y"], "b+x+z": ["x", "z"], "b+y+z": ["y", "z"]}
    scores = {t: [0.5 + 0.1 * len(ms)] * 10 for t, ms in tops.items()}
    effects = axis_effects(design(tops, {"x": "format", "y": "schema", "z": "user"}, "pairs"), values(scores))
    entry = effects["designs"][0]  # 3 moves + 3 interactions + intercept from 4 runs
    assert entry["rank"] == 4 and entry["n_columns"] == 7 and not entry["identifiable"]
    assert "rank 4 of 7 columns" in entry["caveat"]
    fit = fit_of(effects)
    assert not any(e["estimable"] for e in fit["effects"].values())
    assert all(e["loss"] is None and e["ci95"] is None for e in fit["effects"].values())


@pytest.mark.parametrize("own,why", [
    ([0.0] * 10, "the own-topology success (b) is 0: every axis effect is undefined"),
    ([1.0] + [0.0] * 99, "ties with 0"),
])
def test_every_effect_is_undefined_with_the_reason_when_the_own_score_ties_with_0(own, why):
    scores = {"b": own, "b+x": [0.0] * len(own)}
    fit = fit_of(axis_effects(design({"b": [], "b+x": ["x"]}, {"x": "format"}), values(scores)))
    assert why in fit["undefined"] and fit["effects"] == {}


def test_every_metric_the_values_hold_gets_its_own_fit_dimensions_included():
    vals = values({"b": [1.0] * 4, "b+x": [0.0] * 4})
    for cell in vals["m"].values():
        cell["clarification"] = {k: {0: 0.5} for k in cell["success"]}
    fit = axis_effects(design({"b": [], "b+x": ["x"]}, {"x": "user"}), vals)["designs"][0]["rows"][0]["metrics"]
    assert set(fit) == {"success", "clarification"}
    assert fit["success"]["effects"]["x"]["loss"] == 1.0 and fit["clarification"]["effects"]["x"]["loss"] == 0.0


def test_no_design_or_no_values_is_no_section():
    assert axis_effects(None, {}) is None and axis_effects(design({"b": []}, {}), None) is None
