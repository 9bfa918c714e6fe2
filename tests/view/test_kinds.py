"""The viewer's first screen fits the run: a transfer matrix leads with its matrix (own topology and
transfer, no empty chart), a sweep's run with the sweep's points and curves (its folder's sweep.png), and
every picture topoeval wrote shows, served and exported; a run whose model never called a tool says so;
a failed episode shows the answer the suite expected. In headless Chromium, screenshots kept with the
viewer's other pages (`10-*.png` in tests/.artifacts/view/ or $TOPOEVAL_VIEW_SHOTS)."""

import json
import subprocess
import sys

import pytest

import topoeval
from tests.view.crafted import HOSTILE, record, write_run
from tests.view.test_viewer import assert_inert, browse, needs_chromium, page, text
from topoeval.analysis.diagnostics import no_tool_call_notice
from topoeval.view.data import Catalogue
from topoeval.view.kinds import matrix_headline
from topoeval.view.server import Viewer


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    """A results folder holding a transfer-matrix run (oracle and noop, 1 task) and a sweep folder (noop at
    step 0, oracle at step 10, 1 task) as `topoeval sweep --out` writes it; the catalogue's ids of both."""
    root = tmp_path_factory.mktemp("kinds") / "results"
    topoeval.run_protocol("transfer_matrix", ["oracle", "noop"], root / "tm", tasks=1)
    proc = subprocess.run([sys.executable, "-c", "from topoeval.cli import main; main()", "sweep", "wiki_to_travel",
                           "--point", "0=noop", "--point", "10=oracle", "--tasks", "1", "--out", str(root / "sw")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    catalogue = Catalogue(root)
    ids = {d.parent.name if d.name == "run" else d.name: rid for rid, d in catalogue.runs.items()}
    return root, ids


def test_a_matrix_run_leads_with_its_matrix_and_shows_no_empty_chart(kinds):
    root, ids = kinds
    assert not (root / "tm" / "plot_dimensions.png").exists()  # no id/ood role: the report draws no empty chart
    run = Catalogue(root).run_payload(ids["tm"])
    assert run["pictures"] == ["matrix.png"]
    head = text(run["headline"])
    assert "Transfer matrix" in head
    oracle = head.split("oracle")[1].split("noop")[0]
    assert oracle.count("1.00 n=1") == 6 and "transfer" in head and "none: not an adapter" in oracle
    rows = {r["id"]: r for r in Catalogue(root).runs_payload()["runs"]}
    assert rows[ids["tm"]]["kind"] == "transfer matrix" and rows[ids["sw"]]["kind"] == "sweep"


def test_a_matrix_row_marks_its_own_topology_and_its_transfer():
    cell = {"success": {"mean": 1.0, "ci95": [1.0, 1.0], "n": 2}}
    low = {"success": {"mean": 0.5, "ci95": [0.0, 1.0], "n": 2}}
    summary = {"cells": [], "matrix": {"topologies": ["wiki", "travel<b>"], "rows": [
        {"model": "a<i>", "baseline": "0-shot", "train_topology": "wiki", "cells": {"wiki": cell, "travel<b>": low}}]}}
    html = matrix_headline(summary)
    assert '<td class="num own">1.00 [1.00, 1.00] n=2 <span class="pill">own</span></td>' in html
    assert "<td class=\"num\">1.00 [1.00, 1.00] n=2</td><td class=\"num\">0.50</td>" in html  # own, transfer
    assert "a&lt;i&gt;" in html and "travel&lt;b&gt;" in html
    assert "<i>" not in html and "<b>" not in html.split("</p>")[1]


def test_a_sweeps_run_leads_with_the_sweeps_points_and_curves(kinds):
    root, ids = kinds
    run = Catalogue(root).run_payload(ids["sw"])
    assert run["pictures"][0] == "sweep.png" and not (root / "sw" / "run" / "sweep.png").exists()
    assert Catalogue(root).picture(ids["sw"], "sweep.png") == (root / "sw" / "sweep.png").read_bytes()
    sweep = text(run["sweep"])
    assert "Sweep" in sweep and "0 noop 0.00 n=1" in sweep and "10 oracle 1.00 n=1" in sweep


def test_a_sweep_folder_outside_the_root_or_beside_a_run_given_alone_is_not_read(kinds):
    root, ids = kinds
    catalogue = Catalogue(root / "sw" / "run")  # the run folder itself as the root: its parent is not read
    (rid,) = catalogue.runs
    assert catalogue.sweep(rid) is None and "sweep.png" not in catalogue.pictures(rid)
    given = Catalogue.of_runs([root / "sw" / "run"], "given")  # runs given one by one: nothing beside them
    (rid,) = given.runs
    assert given.sweep(rid) is None and "sweep.png" not in given.pictures(rid)


@needs_chromium
def test_matrix_and_sweep_pages_lead_with_their_own_first_screen_served_and_exported(kinds, tmp_path, cli):
    root, ids = kinds
    with Viewer(root) as served:
        runs = text(browse(page(served), tmp_path, "10-kinds-runs.png"))
        matrix = browse(page(served, f"run={ids['tm']}"), tmp_path, "10-matrix-run.png", height=1300)
        sweep = browse(page(served, f"run={ids['sw']}"), tmp_path, "10-sweep-run.png", height=1300)
    assert "transfer matrix" in runs and "sweep" in runs
    assert "Transfer matrix" in matrix and "files/" + ids["tm"] + "/matrix.png" in matrix
    assert "plot_dimensions.png" not in matrix
    assert matrix.index("Transfer matrix") < matrix.index("matrix.png")
    assert "files/" + ids["sw"] + "/sweep.png" in sweep
    assert sweep.index('id="sweep"') < sweep.index('id="headline"') < sweep.index("sweep.png")
    out = tmp_path / "site"
    assert cli("view", str(root), "--export", str(out)).returncode == 0
    assert (out / "files" / ids["sw"] / "sweep.png").read_bytes() == (root / "sw" / "sweep.png").read_bytes()
    assert (out / "files" / ids["tm"] / "matrix.png").exists()
    assert not (out / "files" / ids["tm"] / "plot_dimensions.png").exists()
    exported = browse((out / "index.html").as_uri() + f"?run={ids['sw']}", tmp_path, "10-sweep-export.png")
    assert "sweep.png" in exported and "10 oracle" in text(exported)


def silent_run(root):
    """A run whose one cell made no tool call in its one episode (summary.json as the runner writes it), and
    a failed episode whose final answer and expected answer hold markup."""
    rec = record(model="quiet", text="prose", final_answer=HOSTILE, expected_answer="Paris" + HOSTILE)
    rec["scores"] = {**rec["scores"], "success": 0.0}
    run = write_run(root / "quiet", [rec])
    cell = {"model": "quiet", "baseline": "0-shot", "topology": "a", "role": "id", "n_episodes": 1, "n_errors": 0,
            "never_calls_tools": True, "diagnostics": {"no_tool_call_share": 1.0, "no_tool_call_episodes": 1},
            "metrics": {}}
    (run / "summary.json").write_text(json.dumps({"protocol": "p", "cells": [cell]}))
    return [cell]


def test_a_run_carries_the_no_tool_call_sentence(tmp_path):
    cells = silent_run(tmp_path)
    catalogue = Catalogue(tmp_path)
    (rid,) = catalogue.runs
    assert catalogue.run_payload(rid)["notice"] == no_tool_call_notice(cells) is not None


@needs_chromium
def test_the_run_page_says_the_model_never_called_a_tool_and_a_failure_shows_the_expected_answer(tmp_path):
    cells = silent_run(tmp_path / "results")
    (rid,) = Catalogue(tmp_path / "results").runs
    with Viewer(tmp_path / "results") as served:
        run = text(browse(page(served, f"run={rid}"), tmp_path, "10-no-tool-calls.png"))
        episode = browse(page(served, f"run={rid}&ep=0"), tmp_path, "10-expected-answer.png", height=1200)
    assert no_tool_call_notice(cells) in run.replace("&amp;", "&")
    assert_inert(episode)
    plain = text(episode)
    assert "expected: Paris&lt;img src=x" in plain and "final answer: &lt;img src=x" in plain


@needs_chromium
def test_a_solved_episode_shows_no_expected_answer(tmp_path):
    rec = record(final_answer="Paris", expected_answer="Paris")
    write_run(tmp_path / "results" / "ok", [rec])
    (rid,) = Catalogue(tmp_path / "results").runs
    with Viewer(tmp_path / "results") as served:
        plain = text(browse(page(served, f"run={rid}&ep=0"), tmp_path, "10-solved-no-expected.png"))
    assert "final answer: Paris" in plain and "expected:" not in plain
