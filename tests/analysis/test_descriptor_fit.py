"""How much the measured descriptors explain of a matrix's off-diagonal loss (#58)."""

import pytest

from topoeval.analysis.descriptor_fit import CAVEAT, descriptor_fit


def point(mean, n=40):
    return {"success": {"mean": mean, "ci95": None, "se": 0.01, "std": 0.05, "n": n}}


def matrix(own, losses, train="a"):
    cells = {train: point(own), **{t: point(own - loss) for t, loss in losses.items()}}
    return {"topologies": list(cells), "rows": [{"model": "m", "baseline": "0-shot", "train_topology": train,
                                                 "cells": cells}]}


DESCRIPTORS = {t: {"tools_offered": tools, "prompt_tokens": 100.0 + 7 * (i % 3), "serial_share": 0.5,
                   "gold_calls_mean": 2.0 + (i % 2), "gold_calls_std": 0.0, "irreversible_per_task": 0.0,
                   "observation_chars_per_turn": None}
               for i, (t, tools) in enumerate({"a": 2, "b": 4, "c": 6, "d": 8, "e": 10, "f": 3, "g": 5}.items())}


def test_a_loss_that_grows_with_the_tools_offered_is_explained_by_that_descriptor():
    losses = {t: 0.05 * (DESCRIPTORS[t]["tools_offered"] - 2) for t in "bcdefg"}
    fit = descriptor_fit(matrix(0.9, losses), DESCRIPTORS)
    assert fit["n_pairs"] == 6 and fit["caveat"] == CAVEAT
    tools = fit["per_descriptor"]["tools_offered"]
    assert tools["slope"] == pytest.approx(0.05) and tools["r2"] == pytest.approx(1.0)
    assert fit["per_descriptor"]["serial_share"]["why"] == "the same change on every pair: explains nothing here"
    assert fit["per_descriptor"]["observation_chars_per_turn"]["why"] == "not measured on every pair"
    assert fit["joint"]["r2"] == pytest.approx(1.0) and fit["joint"]["descriptors"] == [
        "tools_offered", "gold_calls_mean", "prompt_tokens"]
    assert "135M adapters need not explain a larger model's" in CAVEAT


def test_pairs_whose_own_score_ties_with_0_are_left_out_and_too_few_pairs_are_not_fitted():
    fit = descriptor_fit(matrix(0.0, {"b": -0.5, "c": -0.5, "d": 0.0}), DESCRIPTORS)
    assert fit["n_pairs"] == 0 and "too few to relate" in fit["why"]
    assert descriptor_fit(matrix(0.9, {"b": 0.1}), None) is None
