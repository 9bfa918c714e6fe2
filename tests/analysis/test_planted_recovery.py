"""Proved on a known answer: on the shipped designed matrix (protocols/axis_matrix.yaml), the attribution gives
each planted reference policy its planted axis — the planted loss inside the CI, near it — and 0 elsewhere (CI
covering 0); a combination of two planted weaknesses gets both; a design that cannot tell two moves apart says
so instead of splitting the loss (#58). The table is bench/planted_recovery.py's."""

import importlib.util
from pathlib import Path

import pytest

import topoeval
from topoeval.policies.reference import PLANTED, PLANTED_SIZE

ROOT = Path(__file__).resolve().parents[2]


def bench():
    spec = importlib.util.spec_from_file_location("planted_recovery", ROOT / "bench" / "planted_recovery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recovered(tmp_path_factory):
    return bench().recovery(tasks=40, out=tmp_path_factory.mktemp("planted"))


@pytest.mark.slow
def test_every_planted_weakness_is_recovered_on_its_axis_and_nothing_is_found_elsewhere(recovered):
    planted = [r for r in recovered if r["planted"]]
    assert {r["policy"].removeprefix("planted-") for r in planted if "+" not in r["policy"]} == set(PLANTED)
    for r in recovered:
        assert r["covered"], r  # every CI covers the planted loss (0 where nothing is planted)
        assert abs(r["loss"] - r["planted"]) <= (0.15 if r["planted"] else 0.0), r
    # every move each weakness fires on, on every base that has it, carries PLANTED_SIZE
    moves = {(r["policy"], r["base"], r["term"]) for r in planted if r["planted"] == PLANTED_SIZE}
    assert ("planted-merged", "travel", "merged") in moves and ("planted-format", "wiki", "hermes") in moves
    assert ("planted-user", "travel", "no-user") in moves and ("planted-schema", "wiki", "renamed") in moves


@pytest.mark.slow
def test_two_planted_weaknesses_are_both_recovered_and_their_pair_interacts_as_planted(recovered):
    combo = {(r["base"], r["term"]): r for r in recovered if r["policy"] == "planted-format+merged"}
    assert combo[("travel", "hermes")]["planted"] == combo[("travel", "merged")]["planted"] == PLANTED_SIZE
    assert combo[("travel", "hermes")]["covered"] and combo[("travel", "merged")]["covered"]
    assert combo[("travel", "hermes × merged")]["planted"] == -PLANTED_SIZE ** 2  # two independent draws
    assert combo[("travel", "hermes × merged")]["covered"]
    assert combo[("travel", "renamed")]["loss"] == 0.0 and combo[("wiki", "hermes")]["covered"]


@pytest.mark.slow
def test_a_design_that_cannot_tell_two_moves_apart_gives_them_one_row_not_a_split(tmp_path):
    run = topoeval.run_protocol("axis_matrix", ["planted-format"], tmp_path / "run", tasks=20, progress=False,
                                topologies=["wiki", "wiki+renamed+hermes"])
    (design,) = run.summary["matrix"]["axis_effects"]["designs"]
    assert design["base"] == "wiki" and design["confounded"] == [["renamed", "hermes", "renamed × hermes"]]
    effects = design["rows"][0]["metrics"]["success"]["effects"]
    assert list(effects) == ["renamed + hermes + renamed × hermes"]
    row = effects["renamed + hermes + renamed × hermes"]
    assert row["separable"] is False and row["ci95"][0] <= PLANTED_SIZE <= row["ci95"][1]
    md = (run.run_dir / "report.md").read_text()
    assert "| renamed + hermes + renamed × hermes (not separable in this design) | schema + format" in md
    assert (run.run_dir / "axis_effects.png").is_file()
    html = (run.run_dir / "report.html").read_text()
    assert "Loss per axis (designed matrix around wiki, plan pairs)" in html and 'alt="axis_effects"' in html


@pytest.mark.slow
def test_the_terminal_prints_each_models_loss_per_move_after_the_matrix(tmp_path):
    import io

    from rich.console import Console

    from topoeval.report.matrix import print_matrix_table

    run = topoeval.run_protocol("axis_matrix", ["planted-merged"], tmp_path / "run", tasks=8, progress=False,
                                topologies=["travel", "travel+merged", "travel+renamed"])
    text = io.StringIO()
    print_matrix_table(run.summary["matrix"], Console(file=text, width=250))  # what `topoeval run` prints
    out = " ".join(text.getvalue().split())
    assert "loss per axis around travel (success, loss [95 % CI]; rank 3 of 3):" in out
    assert "planted-merged: renamed 0.00 [0.00, 0.00]; merged 0." in out


def test_a_designed_matrix_run_fits_dq_and_each_dimension_beside_success(tmp_path):
    """#58 item 2: each move's effect on success, on dq and on each decision-quality dimension that applies; the
    summary keeps every metric's values for the fit, not only success and dq."""
    run = topoeval.run_protocol("axis_matrix", ["planted-user"], tmp_path / "run", tasks=4, progress=False,
                                topologies=["travel", "travel+no-user"])
    (design,) = run.summary["matrix"]["axis_effects"]["designs"]
    metrics = design["rows"][0]["metrics"]
    assert {"success", "dq", "efficiency"} <= set(metrics), sorted(metrics)
