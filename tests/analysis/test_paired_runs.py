"""Paired comparisons read from run folders: two models of one run, two runs, and the refusals."""

import pytest

from topoeval.analysis.paired_runs import paired_runs
from topoeval.core.errors import UserError

from .paired_folders import make_run, ones


def test_two_models_of_one_run_are_paired_per_cell_with_their_flipped_task_ids(tmp_path):
    run = make_run(tmp_path / "run", {"sft": {"wiki": ones(12, 2), "travel": ones(12, 6)},
                                      "grpo": {"wiki": ones(12, 10), "travel": ones(12, 6)}})
    result = paired_runs([run], ["sft", "grpo"])
    (cmp,) = result.comparisons
    wiki, travel = cmp.cells
    assert (wiki.topology, wiki.n_pairs, wiki.n_up, wiki.n_down) == ("wiki", 12, 8, 0)
    assert wiki.flips.up == [f"t{i:02}" for i in range(2, 10)] and wiki.verdict == "b_better"
    assert travel.n_up == travel.n_down == 0 and travel.verdict == "tie" and travel.mcnemar_p == 1.0
    assert wiki.quality["dq"].diff == pytest.approx(0.5 * 8 / 12)
    assert result.dump()["schema"] == "topoeval.compare/1" and result.alpha == 0.05


def test_two_runs_of_one_model_each_are_paired_and_labelled_by_run(tmp_path):
    a = make_run(tmp_path / "a", {"base": {"wiki": ones(6, 5)}})
    b = make_run(tmp_path / "b", {"tuned": {"wiki": ones(6, 1)}})
    (cmp,) = paired_runs([a, b]).comparisons
    assert (cmp.a, cmp.b) == ("base (a)", "tuned (b)")
    assert cmp.cells[0].n_down == 4 and cmp.cells[0].verdict == "tie"  # p = 0.125


def test_runs_of_different_task_sets_are_refused_in_one_line(tmp_path):
    a = make_run(tmp_path / "a", {"m": {"wiki": ones(6, 5)}}, task_set="one")
    b = make_run(tmp_path / "b", {"m": {"wiki": ones(6, 5)}}, task_set="two")
    with pytest.raises(UserError, match="different task sets cannot be paired") as exc:
        paired_runs([a, b])
    assert "\n" not in str(exc.value)


def test_old_runs_without_a_task_set_hash_are_refused_when_their_task_ids_differ(tmp_path):
    a = make_run(tmp_path / "a", {"m": {"wiki": ones(6, 5)}}, task_set=None)
    b = make_run(tmp_path / "b", {"m": {"wiki": ones(6, 5, prefix="u")}}, task_set=None)
    with pytest.raises(UserError, match="task ids differ"):
        paired_runs([a, b])


def test_an_unknown_model_names_the_run_s_models(tmp_path):
    run = make_run(tmp_path / "run", {"sft": {"wiki": ones(3, 1)}, "grpo": {"wiki": ones(3, 2)}})
    with pytest.raises(UserError, match=r"no model 'grp' \(did you mean 'grpo'\?\); its models: grpo, sft"):
        paired_runs([run], ["sft", "grp"])


def test_an_errored_episode_is_not_paired_and_a_task_missing_on_one_side_is_listed(tmp_path):
    run = make_run(tmp_path / "run", {"a": {"wiki": {"t1": [0.0], "t2": [1.0], "t3": [1.0]}},
                                      "b": {"wiki": {"t1": [1.0], "t2": [None], "t3": [1.0]}}})
    (cell,) = paired_runs([run], ["a", "b"]).comparisons[0].cells
    assert cell.n_pairs == 2 and cell.flips.up == ["t1"] and cell.flips.only_a == ["t2"]


def test_k_samples_flip_on_the_per_task_pass_rate(tmp_path):
    run = make_run(tmp_path / "run", {"a": {"wiki": {"t1": [1.0, 0.0, 0.0], "t2": [1.0, 1.0, 1.0]}},
                                      "b": {"wiki": {"t1": [1.0, 1.0, 0.0], "t2": [1.0, 1.0, 0.0]}}})
    (cell,) = paired_runs([run], ["a", "b"]).comparisons[0].cells
    assert cell.flips.up == ["t1"] and cell.flips.down == ["t2"]
    assert cell.success.diff == pytest.approx(0.0)


def test_the_api_s_compare_paired_is_the_paired_comparison_compare_prints(tmp_path):
    from topoeval.api import compare_paired

    run = make_run(tmp_path / "run", {"sft": {"wiki": ones(4, 1)}, "grpo": {"wiki": ones(4, 3)}})
    assert compare_paired([run], ["sft", "grpo"]) == paired_runs([run], ["sft", "grpo"])
