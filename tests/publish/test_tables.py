"""topoeval.publish.tables: each published column holds its own value. With k samples of a model that is not the
oracle, pass@1, pass@k and pass^k differ (the oracle, where all three are 1, cannot tell them apart); and one row
of each table (results, matrix, episodes), read back from a run folder written by hand, has every column's value
checked against what its run holds (#61: a column filled from the wrong field, under the wrong name or with the
wrong fallback fails here)."""

from pathlib import Path

import pytest

import topoeval
from topoeval.core.messages import final
from topoeval.core.policy import Policy
from topoeval.policies.reference import OraclePolicy
from topoeval.publish.tables import matrix_rows, result_rows

K = 3


class FirstTryOnly(Policy):
    """Solves a task on its first sample only (the oracle there, an empty answer on every later one): on every
    task pass@1 = 1/k, pass@k = 1 and pass^k = 0."""

    name = "first-try"
    concurrency = 64

    def __init__(self):
        self.oracle = OraclePolicy()

    async def act(self, messages, tools, sampling, ctx):
        if ctx.sample == 0:
            return await self.oracle.act(messages, tools, sampling, ctx)
        return final("")


@pytest.fixture(scope="module")
def sampled_matrix(tmp_path_factory):
    base = tmp_path_factory.mktemp("sampled")
    path = base / "m.yaml"
    path.write_text("name: m\nmatrix:\n  topologies:\n    - {name: wiki, suite: wiki}\n"
                    "    - {name: travel, suite: travel}\ntasks: {test: {n: 2}, fewshot: {n: 2}}\n")
    return topoeval.run_protocol(str(path), [FirstTryOnly()], base / "run", samples=K, temperature=0.7,
                                 trained_on=["first-try=wiki"]).run_dir


def test_a_sampled_matrix_row_publishes_pass_at_k_and_pass_hat_k_at_the_run_s_k_not_at_1(sampled_matrix):
    rows = {(r["topology"], r["metric"]): r for r in matrix_rows(sampled_matrix)}
    for topology in ("wiki", "travel"):
        row = rows[(topology, "success")]
        assert row["samples"] == K and row["mean"] == pytest.approx(1 / K)  # pass@1
        assert row["pass_at_k"] == 1.0  # some sample of every task succeeds
        assert row["pass_hat_k"] == 0.0  # no task succeeds on every sample
        assert row["zero_signal_share"] == 0.0  # every task has both outcomes: a signal to learn from
    assert rows[("wiki", "success")]["own"] and not rows[("travel", "success")]["own"]


def test_a_sampled_results_row_lists_pass_at_k_and_pass_hat_k_for_every_k(sampled_matrix):
    rows = [r for r in result_rows(sampled_matrix) if r["metric"] == "success"]
    assert len(rows) == 2
    for row in rows:
        assert row["mean"] == pytest.approx(1 / K)
        assert row["pass_at_k"] == pytest.approx([1 / K, 2 / K, 1.0])  # pass@1, pass@2, pass@3
        assert row["pass_hat_k"] == pytest.approx([1 / K, 0.0, 0.0])  # pass^1, pass^2, pass^3


def test_the_reproduce_command_carries_every_override_the_run_had():
    from topoeval.publish.tables import reproduce_command

    meta = {"protocol": {"name": "wiki_to_travel"},
            "overrides": {"topologies": ["wiki", "travel"], "tasks": 5, "samples": 3, "max_turns": 6, "max_tokens": 64,
                          "temperature": 0.7, "top_p": 0.9}}
    assert reproduce_command(meta, "m", "2-shot") == (
        "topoeval run wiki_to_travel --model m --shots 2 --topology wiki --topology travel --tasks 5 --samples 3 "
        "--max-turns 6 --max-tokens 64 --temperature 0.7 --top-p 0.9")
    assert reproduce_command({"protocol": {"name": "p"}}, "m", "0-shot") == "topoeval run p --model m --shots 0"
    assert reproduce_command({"protocol": {"name": "p"}, "overrides": {}}, "m", "oracle-baseline") == (
        "topoeval run p --model m")


def test_a_run_without_samples_recorded_is_one_sample():
    from topoeval.publish.tables import run_samples

    assert (run_samples({}), run_samples({"samples": None}), run_samples({"samples": 4})) == (1, 1, 4)


def test_count_and_text_columns_take_whatever_a_record_holds():
    from topoeval.publish.tables import _count, _text

    assert [_count(v) for v in (3, 2.9, True, "4", None)] == [3, 2, 0, 0, 0]
    assert [_text(v) for v in (None, "é", {"a": "é"}, [1])] == [None, "é", '{"a": "é"}', "[1]"]


def row(model, topology="t", metric="success", date="2026-01-01", samples=1, task_set="s1", mean=0.5):
    return {"protocol": "p", "model": model, "baseline": "0-shot", "topology": topology, "metric": metric,
            "task_set_sha256": task_set, "samples": samples, "date": date, "mean": mean}


def test_a_new_publish_replaces_the_rows_of_its_keys_only_and_the_result_is_sorted():
    from topoeval.publish.tables import merge

    old = [row("b"), row("a", task_set="s1"), row("a", samples=2)]
    new = [row("a", task_set="s1", mean=0.75), row("c", topology="u")]
    merged = merge(old, new)
    # sorted by protocol, model, baseline, topology and metric; the kept rows before the new ones within a key
    assert [(r["model"], r["samples"], r["mean"]) for r in merged] == [("a", 2, 0.5), ("a", 1, 0.75), ("b", 1, 0.5),
                                                                        ("c", 1, 0.5)]
    assert merge([], []) == []


def test_the_latest_view_keeps_the_newest_row_of_each_key_a_dated_one_over_an_undated_one():
    from topoeval.publish.tables import latest

    rows = [row("a", date="2026-01-02", mean=0.25), row("a", date="2026-01-03", mean=0.75),
            row("a", date=None, mean=0.0), row("a", samples=2, date="2026-01-01", mean=0.5),
            row("b", date=None, mean=0.125)]
    assert [(r["model"], r["samples"], r["mean"]) for r in latest(rows)] == [("a", 1, 0.75), ("a", 2, 0.5),
                                                                              ("b", 1, 0.125)]


def test_each_episode_file_s_path_is_safe_and_k_samples_live_beside_the_greedy_ones():
    from topoeval.publish.tables import episodes_path

    assert episodes_path("p", "m", "0-shot", "0123456789abcdef") == "episodes/p/m/0-shot-0123456789ab.parquet"
    assert episodes_path("p", "m", "0-shot", "0123456789abcdef", 3) == "episodes/p/m/0-shot-0123456789ab-k3.parquet"
    assert episodes_path("../p", "org/m", "0-shot", "x") == "episodes/_.._p/org_m/0-shot-x.parquet"


# --- every column of one row per table, read back from a run folder written by hand (#61: each value checked,
# so a column filled from the wrong field, under the wrong name or with the wrong default fails here) ---

P_SHA, T_SHA = "p" * 64, "t" * 64


def _run_folder(path, meta, summary, plan=None, records=()):
    """A finished run folder with exactly these run.json, summary.json, plan.json (None: none) and records."""
    import json

    from topoeval.runner.shards import write_plan_keys
    from topoeval.runner.store import EPISODES, record_line

    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps(meta))
    (path / "summary.json").write_text(json.dumps(summary))
    if plan is not None:
        write_plan_keys(path, plan["models"], plan.get("samples", 1), plan.get("order", []), plan.get("keys", []))
    (path / EPISODES).write_bytes(b"".join(record_line(r) for r in records))
    return path


def _assert_row(row, expected, columns):
    """``row`` has the schema's columns, and each column ``expected`` names holds exactly that value."""
    assert set(row) == set(columns)
    assert {k: row[k] for k in expected} == expected
    for name, value in expected.items():  # 1 == 1.0 == True: the type of each value is checked too
        assert type(row[name]) is type(value), name


def test_every_results_column_comes_from_its_own_field_of_the_run(tmp_path):
    from topoeval.publish.schema import RESULT_COLUMNS
    from topoeval.runner.shards import Unplanned

    meta = {"protocol": {"name": "proto"}, "models": ["m1"], "samples": 3, "started": "2026-02-01T10:00:00",
            "ended": "2026-02-02T11:00:00", "topoeval_version": "9.9.9", "overrides": {"tasks": 4},
            "inference": {"m1": {"zeta": 1, "alpha": 2}}}
    cells = [
        {"model": "m1", "baseline": "2-shot", "topology": "wiki", "role": "id", "suite": "wiki-suite", "n_errors": 2,
         "metrics": {"success": {"mean": 0.25, "std": 0.5, "se": 0.125, "ci95": [0.0, 0.75], "n": 8,
                                 "pass@k": {"1": 0.25, "10": 0.9, "2": 0.5},
                                 "pass^k": {"2": 0.1, "1": 0.25, "10": 0.0}},
                     "dq": {"mean": 0.5}, "notes": "not a metric", "coverage": {"std": 1.0}}},
        {"model": "m1", "baseline": "0-shot", "topology": "travel", "role": "ood", "suite": "travel", "metrics": {}},
        {"model": "m1", "baseline": "0-shot", "topology": "unplanned", "role": "ood", "suite": "x",
         "metrics": {"success": {"mean": 1.0}}},
    ]
    summary = {"protocol": "proto", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA, "run_id": "run-given",
               "cells": cells}
    run = _run_folder(tmp_path / "run-dir", meta, summary,
                      plan={"models": ["m1"], "order": [["m1", "2-shot", "wiki"], ["m1", "0-shot", "travel"]]})
    with pytest.warns(Unplanned, match="^.*/run-dir: left 1 summary cell\\(s\\) out of the publish: their model, "
                                       "baseline and topology are not in the run's plan \\(plan.json\\)$"):
        rows = result_rows(run)
    same = {"protocol": "proto", "model": "m1", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA, "samples": 3,
            "topoeval_version": "9.9.9", "date": "2026-02-02T11:00:00", "run_id": "run-given",
            "inference": '{"alpha": 2, "zeta": 1}'}
    wiki = {**same, "baseline": "2-shot", "topology": "wiki", "role": "id", "suite": "wiki-suite", "n_errors": 2,
            "incomplete": True, "reproduce": "topoeval run proto --model m1 --shots 2 --tasks 4"}
    assert [(r["topology"], r["metric"]) for r in rows] == [("wiki", "dq"), ("wiki", "success"), ("travel", "success")]
    _assert_row(rows[0], {**wiki, "metric": "dq", "mean": 0.5, "std": None, "se": None, "ci_low": None,
                          "ci_high": None, "n": 0, "pass_at_k": [], "pass_hat_k": []}, RESULT_COLUMNS)
    _assert_row(rows[1], {**wiki, "metric": "success", "mean": 0.25, "std": 0.5, "se": 0.125, "ci_low": 0.0,
                          "ci_high": 0.75, "n": 8, "pass_at_k": [0.25, 0.5, 0.9], "pass_hat_k": [0.25, 0.1, 0.0]},
                RESULT_COLUMNS)
    # a cell with no success metric still has its success row (a null mean); no n_errors: complete
    _assert_row(rows[2], {**same, "baseline": "0-shot", "topology": "travel", "role": "ood", "suite": "travel",
                          "metric": "success", "mean": None, "std": None, "se": None, "ci_low": None, "ci_high": None,
                          "n": 0, "pass_at_k": [], "pass_hat_k": [], "n_errors": 0, "incomplete": False,
                          "reproduce": "topoeval run proto --model m1 --shots 0 --tasks 4"}, RESULT_COLUMNS)


def test_a_results_row_of_a_sparse_run_takes_each_column_s_fallback(tmp_path):
    import warnings

    from topoeval.core.version import __version__
    from topoeval.publish.schema import RESULT_COLUMNS

    meta = {"protocol": {"name": "proto"}, "started": "2026-03-01T00:00:00"}
    summary = {"protocol": "proto", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA,
               "cells": [{"model": "m2", "baseline": "oracle", "topology": "wiki", "role": None, "suite": "wiki",
                          "metrics": {"success": {"mean": 1.0, "n": 2}}}]}
    run = _run_folder(tmp_path / "folder-name", meta, summary)  # no plan.json: an older run, nothing left out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (row,) = result_rows(run)
    _assert_row(row, {"model": "m2", "baseline": "oracle", "topology": "wiki", "role": None, "metric": "success",
                      "mean": 1.0, "n": 2, "samples": 1, "topoeval_version": __version__,
                      "date": "2026-03-01T00:00:00", "run_id": "folder-name",
                      "reproduce": "topoeval run proto --model m2",
                      "inference": "", "n_errors": 0, "incomplete": False}, RESULT_COLUMNS)


def test_results_rows_without_warn_leave_unplanned_cells_out_silently(tmp_path):
    import warnings

    meta = {"protocol": {"name": "proto"}, "models": ["m1"], "inference": {"other": {"a": 1}}}
    summary = {"protocol": "proto", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA,
               "cells": [{"model": "m1", "baseline": "0-shot", "topology": t, "role": None, "suite": "s",
                          "metrics": {}} for t in ("gone", "kept")]}
    run = _run_folder(tmp_path / "r", meta, summary, plan={"models": ["m1"], "order": [["m1", "0-shot", "kept"]]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = result_rows(run, warn=False)
    assert [(r["topology"], r["inference"], r["date"]) for r in rows] == [("kept", "", None)]


def _point(mean, ci=None, n=None, pass_k=None, pass_hat=None, zero=None):
    point = {"mean": mean}
    for key, value in (("ci95", ci), ("n", n), ("pass@k", pass_k), ("pass^k", pass_hat), ("zero_signal_share", zero)):
        if value is not None:
            point[key] = value
    return point


def _matrix_run(path, meta, rows, plan=True):
    summary = {"protocol": "proto", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA, "run_id": "mrun",
               "cells": [], "matrix": {"rows": rows}}
    return _run_folder(path, meta, summary, plan={"models": ["m1"]} if plan else None)


def test_every_matrix_column_comes_from_its_own_field_of_the_run(tmp_path):
    from topoeval.publish.schema import MATRIX_COLUMNS

    meta = {"protocol": {"name": "proto"}, "models": ["m1"], "samples": 2, "started": "2026-04-01",
            "ended": "2026-04-02", "identity": {"settings": {"temperature": 0.7}}}
    cells = {"wiki": {"success": _point(0.8, ci=[0.6, 0.9], n=5, pass_k={"1": 0.8, "2": 0.95},
                                        pass_hat={"1": 0.8, "2": 0.65}, zero=0.25),
                      "dq": _point(0.6)},
             "travel": {"success": _point(0.4, ci=[0.1, 0.7], n=5), "dq": _point(None)}}
    trained = {"model": "m1", "baseline": "0-shot", "train_topology": "wiki", "train_source": "--trained-on",
               "cells": cells, "own": {"success": 0.8, "dq": 0.6},
               # an own-topology ratio or note (none that topoeval writes) is never published on the diagonal
               "transfer_ratio": {"success": {"travel": 0.5, "wiki": 9.0}, "dq": {}},
               "nulls": {"transfer_ratio.dq.travel": "no scored episode", "transfer_ratio.success.wiki": "not shown",
                         "train_topology": "a note for a row without one: not shown where the row has it"}}
    untrained = {"model": "m1", "baseline": "2-shot", "train_topology": None, "train_source": None, "cells": cells,
                 "own": {"success": None, "dq": None}, "transfer_ratio": {"success": {}, "dq": {}},
                 "nulls": {"train_topology": "no train topology recorded for this model"}}
    older = {**untrained, "baseline": "3-shot", "train_source": "protocol", "nulls": {}}  # no note recorded at all
    ghost = {**trained, "model": "ghost"}  # a model the run never planned: left out, the rows after it kept
    run = _matrix_run(tmp_path / "m", meta, [ghost, trained, untrained, older])
    published = matrix_rows(run)
    assert [(r["model"], r["baseline"]) for r in published] == [("m1", b) for b in ("0-shot", "2-shot", "3-shot")
                                                                for _ in range(4)]
    rows = {(r["baseline"], r["topology"], r["metric"]): r for r in published}
    same = {"protocol": "proto", "model": "m1", "samples": 2, "temperature": 0.7, "protocol_sha256": P_SHA,
            "task_set_sha256": T_SHA, "date": "2026-04-02", "run_id": "mrun"}
    _assert_row(rows[("0-shot", "wiki", "success")], {
        **same, "baseline": "0-shot", "train_topology": "wiki", "topology": "wiki", "column": 0, "own": True,
        "metric": "success", "mean": 0.8, "ci_low": 0.6, "ci_high": 0.9, "n": 5, "own_mean": 0.8,
        "transfer_ratio": None, "ratio_note": "", "pass_at_k": 0.95, "pass_hat_k": 0.65, "zero_signal_share": 0.25,
        "reproduce": "topoeval run proto --model m1 --shots 0 --trained-on m1=wiki"}, MATRIX_COLUMNS)
    _assert_row(rows[("0-shot", "travel", "success")], {
        **same, "baseline": "0-shot", "train_topology": "wiki", "topology": "travel", "column": 1, "own": False,
        "metric": "success", "mean": 0.4, "ci_low": 0.1, "ci_high": 0.7, "n": 5, "own_mean": 0.8,
        "transfer_ratio": 0.5, "ratio_note": "", "pass_at_k": None, "pass_hat_k": None, "zero_signal_share": None,
        "reproduce": "topoeval run proto --model m1 --shots 0 --trained-on m1=wiki"}, MATRIX_COLUMNS)
    _assert_row(rows[("0-shot", "travel", "dq")], {
        **same, "baseline": "0-shot", "topology": "travel", "column": 1, "own": False, "metric": "dq", "mean": None,
        "ci_low": None, "ci_high": None, "n": 0, "own_mean": 0.6, "transfer_ratio": None,
        "ratio_note": "no scored episode"}, MATRIX_COLUMNS)
    _assert_row(rows[("2-shot", "travel", "success")], {
        **same, "baseline": "2-shot", "train_topology": None, "own": False, "own_mean": None, "transfer_ratio": None,
        "ratio_note": "no train topology recorded for this model",
        "reproduce": "topoeval run proto --model m1 --shots 2"}, MATRIX_COLUMNS)
    assert rows[("3-shot", "travel", "success")]["ratio_note"] == ""
    assert rows[("3-shot", "travel", "success")]["reproduce"] == "topoeval run proto --model m1 --shots 3"


def test_a_matrix_row_of_a_sparse_run_takes_each_column_s_fallback(tmp_path):
    meta = {"protocol": {"name": "proto"}, "started": "2026-05-01"}
    cells = {"wiki": {"success": _point(1.0, pass_k={"1": 1.0, "2": 1.0}), "dq": _point(1.0)}}
    row = {"model": "m9", "baseline": "oracle", "train_topology": "wiki", "cells": cells,
           "own": {"success": 1.0, "dq": 1.0}, "transfer_ratio": {"success": {}, "dq": {}}, "nulls": {}}
    run = _matrix_run(tmp_path / "m", meta, [row], plan=False)  # no plan.json: every model is published
    summary_path = run / "summary.json"
    import json

    summary = json.loads(summary_path.read_text())
    del summary["run_id"]
    summary_path.write_text(json.dumps(summary))
    out = matrix_rows(run)
    assert [(r["metric"], r["samples"], r["temperature"], r["date"], r["run_id"], r["pass_at_k"]) for r in out] == [
        ("success", 1, None, "2026-05-01", "m", None), ("dq", 1, None, "2026-05-01", "m", None)]


def _record(model, task, sample=0, **fields):
    rec = {"key": f"{model}|0-shot|wiki|{task}|{sample}", "episode_id": f"e-{model}-{task}", "model": model,
           "baseline": "0-shot", "topology": "wiki", "suite": "wiki", "role": None, "task_id": task, "sample": sample,
           "status": "done", "scores": {}, "messages": []}
    return {**rec, **fields}


def test_every_episode_column_comes_from_its_own_field_of_the_record(tmp_path):
    from topoeval.publish.schema import EPISODE_COLUMNS, SCORE_COLUMNS
    from topoeval.publish.tables import episode_rows
    from topoeval.runner.shards import Unplanned

    scores = {"success": 1, "f1": None, "dq": 0.5, "clarification": 0.25, "priority": 1, "risk": 0,
              "parallelism": 0.75, "efficiency": 0.125, "tool_calls": 3}
    full = _record("m1", "t1", sample=1, role="id", family={"kind": "é"}, turns=4, scores=scores,
                   final_answer="Paris é", errors=["boom é", 7], messages=[{"role": "user", "content": "é"}],
                   calls=[{"tool": "find", "args": {"q": "é"}}], events=[{"type": "ask", "text": "é"}])
    failed = _record("m1", "t2", status="error", scores={"success": 0, "dq": 1.0}, errors=None)
    meta = {"protocol": {"name": "proto"}, "models": ["m1"]}
    summary = {"protocol": "proto", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA, "cells": []}
    run = _run_folder(tmp_path / "run", meta, summary, plan={"models": ["m1"], "keys": [full["key"], failed["key"]]},
                      records=[_record("ghost", "t1"), full, _record("ghost", "t2"), failed])
    with pytest.warns(Unplanned, match=f"^{run}: left 2 record\\(s\\) out of the publish: "):
        rows = episode_rows(run)
    assert [r["task_id"] for r in rows] == ["t1", "t2"]
    expected_scores = {"success": 1.0, "dq": 0.5, "clarification": 0.25, "priority": 1.0, "risk": 0.0,
                       "parallelism": 0.75, "efficiency": 0.125}
    _assert_row(rows[0], {
        "protocol": "proto", "model": "m1", "baseline": "0-shot", "topology": "wiki", "role": "id",
        "episode_id": "e-m1-t1", "task_id": "t1", "family": '{"kind": "é"}', "sample": 1, "status": "done",
        "turns": 4, "tool_calls": 3, "final_answer": "Paris é", "errors": '["boom é", "7"]',
        "messages": '[{"role": "user", "content": "é"}]', "calls": '[{"tool": "find", "args": {"q": "é"}}]',
        "events": '[{"type": "ask", "text": "é"}]', "protocol_sha256": P_SHA, "task_set_sha256": T_SHA,
        **{c: expected_scores[c] for c in SCORE_COLUMNS if c in expected_scores}}, EPISODE_COLUMNS)
    assert all(rows[0][c] is None for c in SCORE_COLUMNS if c not in expected_scores)  # f1 null, and unscored ones
    # an episode that ended in error: every score null; no calls, events, turns or errors recorded: the empty ones
    _assert_row(rows[1], {"role": None, "family": None, "sample": 0, "status": "error", "turns": 0, "tool_calls": 0,
                          "final_answer": None, "errors": "[]", "messages": "[]", "calls": "[]", "events": "[]"},
                EPISODE_COLUMNS)
    assert all(rows[1][c] is None for c in SCORE_COLUMNS)


def test_episode_rows_take_the_summary_they_are_given_and_need_no_plan(tmp_path):
    import warnings

    from topoeval.publish.tables import episode_rows

    meta = {"protocol": {"name": "proto"}}
    summary = {"protocol": "proto", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA, "cells": []}
    run = _run_folder(tmp_path / "run", meta, summary, records=[_record("anyone", "t1")])
    given = {"protocol": "given", "protocol_sha256": "gp", "task_set_sha256": "gt"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [(r["model"], r["protocol"], r["protocol_sha256"], r["task_set_sha256"])
                for r in episode_rows(run, given)] == [("anyone", "given", "gp", "gt")]
        assert [r["protocol"] for r in episode_rows(run)] == ["proto"]


def test_a_folder_that_is_not_a_finished_run_is_one_line_naming_it(tmp_path):
    from topoeval.core.errors import UserError
    from topoeval.publish.tables import load_run

    good = {"protocol": "proto", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA, "cells": []}
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(UserError, match=f"^{a_file}: not a finished run folder \\(.*Not a directory"):
        load_run(a_file)
    for name, meta, summary in (("meta-list", [], good), ("summary-list", {}, []),
                                ("no-cells", {}, {**good, "cells": None})):
        run = _run_folder(tmp_path / name, meta, summary)
        with pytest.raises(UserError, match=f"^{run}: not a finished run folder \\(run.json or summary.json is not "
                                            "what topoeval writes\\)$"):
            load_run(run)


def test_a_plan_that_topoeval_did_not_write_publishes_nothing(tmp_path):
    from topoeval.core.errors import UserError

    run = _run_folder(tmp_path / "r", {}, {"protocol": "p", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA,
                                            "cells": []})
    (run / "plan.json").write_text('{"models": "not a list"}')
    with pytest.raises(UserError, match=f"^{run}: its plan.json is not one topoeval wrote; nothing was published$"):
        result_rows(run)


def test_a_folder_another_process_is_writing_is_not_published(tmp_path):
    import fcntl
    import os

    from topoeval.core.errors import UserError
    from topoeval.runner.lock import LOCK

    run = _run_folder(tmp_path / "r", {}, {"protocol": "p", "protocol_sha256": P_SHA, "task_set_sha256": T_SHA,
                                            "cells": []})
    fd = os.open(run / LOCK, os.O_RDWR | os.O_CREAT, 0o600)  # a lock this process's lock table does not know
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(UserError, match="^cannot publish it: .*is being written by"):
            result_rows(run)
    finally:
        os.close(fd)


def test_the_latest_view_keeps_the_first_of_equal_dates_and_never_an_older_or_undated_row():
    from topoeval.publish.tables import latest

    rows = [row("a", date="2026-01-02", mean=0.25), row("a", date="2026-01-02", mean=0.5),
            row("a", date="2026-01-01", mean=0.0), row("b", date=None, mean=0.0),
            row("b", date="2026-01-05", mean=0.75)]
    assert [(r["model"], r["mean"]) for r in latest(rows)] == [("a", 0.25), ("b", 0.75)]


def test_a_text_column_writes_what_json_cannot_as_its_text():
    from topoeval.publish.tables import _text

    assert _text({"at": Path("/x/é")}) == '{"at": "/x/é"}'


def test_an_episode_s_collateral_columns_are_its_scores_as_floats_and_its_reading_as_json():
    from topoeval.publish.tables import collateral_columns

    reading = {"basis": "gold_state", "entities": [{"entity": "seats.é", "kind": "collateral", "at": Path("/x")}]}
    rec = {"status": "done", "collateral": reading,
           "scores": {"collateral": 1, "collateral_irreversible": True, "collateral_entities": "2"}}
    # a bool or a text is not a score someone measured: null, never 1 or 2
    assert collateral_columns(rec) == {
        "collateral": 1.0, "collateral_irreversible": None, "collateral_entities": None,
        "collateral_report": '{"basis": "gold_state", "entities": [{"entity": "seats.é", "kind": "collateral", '
                             '"at": "/x"}]}'}
    assert type(collateral_columns(rec)["collateral"]) is float
    nothing = {"collateral": None, "collateral_irreversible": None, "collateral_entities": None,
               "collateral_report": None}
    assert collateral_columns({**rec, "status": "error"}) == nothing  # an episode that ended in error
    assert collateral_columns({"status": "done", "scores": None, "collateral": "x"}) == nothing  # from anyone
    assert collateral_columns({"status": "done", "scores": {"collateral": 0.0, "collateral_entities": 0}}) == {
        **nothing, "collateral": 0.0, "collateral_entities": 0.0}
