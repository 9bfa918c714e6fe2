"""The metrics' own test: each flawed oracle breaks its own dimension and no other."""

import subprocess

import pytest

from topoeval.analysis.sensitivity import FLAWS, bar_violations, run_matrix


@pytest.fixture(scope="module")
def matrix():
    return run_matrix(["wiki", "travel"], n_tasks=100, seed=0)


def test_bar_is_met_on_a_fixed_sample(matrix):
    assert bar_violations(matrix) == []


def test_every_dimension_applies_to_a_good_share(matrix):
    oracle = matrix["cells"]["oracle"]
    for dim in FLAWS.values():
        assert oracle[dim]["n"] >= 20, dim


def test_which_flaws_cost_success(matrix):
    cells = matrix["cells"]
    # a wrong outcome follows from guessing hidden slots and from ignoring the priority order ...
    assert cells["oracle-no-ask"]["success"]["mean"] < 1.0
    assert cells["oracle-no-priority"]["success"]["mean"] < 1.0
    # ... but not from paying unconfirmed, calling serially, or repeating reads: only decision quality sees those
    for lucky in ("oracle-reckless", "oracle-serial", "oracle-redundant"):
        assert cells[lucky]["success"]["mean"] == 1.0


def test_bar_violations_reports_a_broken_metric(matrix):
    broken = {**matrix, "cells": {**matrix["cells"]}}
    broken["cells"]["oracle-serial"] = {**matrix["cells"]["oracle-serial"], "risk": {"mean": 0.5, "n": 10}}
    assert any("oracle-serial moves risk" in v for v in bar_violations(broken))


def test_cli_prints_the_matrix(topoeval_cmd):
    proc = subprocess.run([*topoeval_cmd, "sensitivity", "--suite", "wiki", "--suite", "travel"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "oracle-reckless" in proc.stdout and "clarification" in proc.stdout and "bar met" in proc.stdout
    # on the wiki alone no task has hidden slots, trade-offs or commitments: those flaws cannot show
    proc = subprocess.run([*topoeval_cmd, "sensitivity", "--suite", "wiki", "--tasks", "20"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
    assert "cannot check clarification, priority, risk" in proc.stdout
