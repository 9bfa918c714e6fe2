"""The metrics' own test, on every suite alone and on the zero-shot cells of wiki_to_travel."""


import pytest

from topoeval.analysis.sensitivity import FLAWS, QUIT_EARLY, bar_violations, protocol_targets, suite_target
from topoeval.api import sensitivity_matrix as run_matrix
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol


@pytest.fixture(scope="module")
def matrices():
    registry = SuiteRegistry()
    return {name: run_matrix(suite_target(name, registry), n_tasks=100) for name in ("wiki", "travel")}


@pytest.fixture(scope="module")
def ood_cell():
    registry = SuiteRegistry()
    targets = {t.name: t for t in protocol_targets(load_protocol("wiki_to_travel", registry), registry)}
    return run_matrix(targets["wiki_to_travel/travel"], n_tasks=40)


@pytest.mark.parametrize("suite", ["wiki", "travel"])
def test_bar_is_met_on_each_suite_alone(matrices, suite):
    assert bar_violations(matrices[suite]) == []


def test_bar_is_met_on_the_zero_shot_ood_cell_of_wiki_to_travel(ood_cell):
    assert ood_cell["tasks"] == 40 and ood_cell["target"] == "wiki_to_travel/travel"
    assert bar_violations(ood_cell) == []


def test_travel_exercises_every_dimension(matrices, ood_cell):
    for matrix in (matrices["travel"], ood_cell):
        oracle = matrix["cells"]["oracle"]
        for dim in FLAWS.values():
            assert oracle[dim]["n"] >= 0.2 * matrix["tasks"], (matrix["target"], dim)


def test_which_flaws_cost_success(matrices):
    cells = matrices["travel"]["cells"]
    # a wrong outcome follows from guessing hidden slots and from ignoring the priority order ...
    assert cells["oracle-no-ask"]["success"]["mean"] < 1.0
    assert cells["oracle-no-priority"]["success"]["mean"] < 1.0
    # ... but not from paying unconfirmed, calling serially, or repeating reads: only decision quality sees those
    for lucky in ("oracle-reckless", "oracle-serial", "oracle-redundant"):
        assert cells[lucky]["success"]["mean"] == 1.0


def test_doing_little_earns_nothing(matrices):
    for matrix in matrices.values():
        cells = matrix["cells"]
        assert cells["random"]["dq"]["mean"] <= 0.2 and cells["noop"]["dq"]["mean"] == 0.0
        quit_early = cells[QUIT_EARLY]
        assert quit_early["success"]["mean"] == 0.0 and not matrix["quit_early_over"]
        assert quit_early["efficiency"]["mean"] <= quit_early["coverage"]["mean"] + 1e-9


def test_bar_violations_reports_a_broken_metric(matrices):
    matrix = matrices["travel"]
    broken = {**matrix, "cells": {**matrix["cells"]}}
    broken["cells"]["oracle-serial"] = {**matrix["cells"]["oracle-serial"], "risk": {"mean": 0.5, "n": 10}}
    broken["cells"]["random"] = {**matrix["cells"]["random"], "dq": {"mean": 0.82, "n": 100}}
    violations = bar_violations({**broken, "quit_early_over": ["travel/test/3-x"]})
    assert any("oracle-serial moves risk" in v for v in violations)
    assert any(v.startswith("random dq = 0.820") for v in violations)
    assert any(v.startswith(f"{QUIT_EARLY} scores parallelism or efficiency above") for v in violations)


def test_cli_prints_one_matrix_per_suite(cli):
    proc = cli("sensitivity", "--suite", "wiki", "--suite", "travel", "--tasks", "30")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sensitivity matrix: wiki" in proc.stdout and "sensitivity matrix: travel" in proc.stdout
    assert "bar met on wiki" in proc.stdout and "bar met on travel" in proc.stdout
    assert "oracle-reckless" in proc.stdout and "oracle-quit-early" in proc.stdout
    # on the wiki alone no task has hidden slots, trade-offs or commitments: those flaws cannot show
    assert "cannot check clarification, priority, risk" in proc.stdout


def test_cli_checks_every_topology_a_protocol_evaluates(cli):
    proc = cli("sensitivity", "wiki_to_travel_ladder", "--tasks", "15")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for topology in ("wiki", "travel", "wiki-renamed", "travel-no-user", "travel-user", "travel-irreversible"):
        assert f"bar met on wiki_to_travel_ladder/{topology}:" in proc.stdout, topology
    # on a flat ordering, "treat the constraints as flat" is what the oracle does: said, not failed
    assert "cannot check priority: with ordering flat, oracle-no-priority is no flaw" in proc.stdout
    proc = cli("sensitivity", "wiki_to_travel", "--suite", "wiki")
    assert proc.returncode != 0 and "not both" in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_a_void_flaw_is_unchecked_not_passed(ood_cell):
    from topoeval.analysis.sensitivity import unchecked, void_flaws

    flat = {**ood_cell, "topology": {**ood_cell["topology"], "ordering": "flat"}}
    assert void_flaws(ood_cell) == [] and void_flaws(flat) == ["oracle-no-priority"]
    # with no user there is nobody to ask, and nobody to confirm a commitment with
    alone = {**ood_cell, "topology": {**ood_cell["topology"], "user": "none"}}
    assert void_flaws(alone) == ["oracle-no-ask", "oracle-reckless"]
    assert "priority" in unchecked(flat) and "priority" not in unchecked(ood_cell)
    # void only excuses the flaw's own drop: a flaw that moves another dimension still misses the bar
    moved = {**flat, "cells": {**flat["cells"], "oracle-no-priority": {
        **flat["cells"]["oracle-no-priority"], "efficiency": {"mean": 0.5, "n": 40}}}}
    assert any("oracle-no-priority moves efficiency" in v for v in bar_violations(moved))
