"""The collapse table, at the end of a run and in report.md (issue 60): the weakest dimension is a column, and
every "—" of a row has its reason in the row's "why —" column (summary.json's ``nulls``)."""

import pytest

from topoeval.metrics.dimensions import DIMENSIONS


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """oracle and noop on wiki_to_travel, zero-shot, 2 tasks: noop's transfer ratio is undefined (S_id is 0) and
    the oracle has no weakest dimension (every one at 1.0)."""
    from topoeval.api import run_protocol

    out = tmp_path_factory.mktemp("w2t")
    result = run_protocol("wiki_to_travel", ["oracle", "noop"], out, tasks=2, shots=[0])
    return out, result


def test_report_md_has_the_weakest_column_and_the_reason_for_each_dash(run):
    out, _ = run
    md = (out / "report.md").read_text()
    assert ("| model | baseline | S_id | topology | S_ood | transfer ratio | gap | few-shot recovery | falls most | "
            "weakest | why — |") in md
    noop = next(line for line in md.splitlines() if line.startswith("| noop | 0-shot | 0.00 | travel |"))
    cells = [c.strip() for c in noop.strip("|").split("|")]
    assert cells[5] == "—" and cells[9] == "clarification 0.00"  # the ratio is empty, the weakest dimension named
    assert "transfer ratio: S_id is 0: the ratio S_ood / S_id is undefined" in cells[10]
    assert "few-shot recovery: measured from this baseline" in cells[10]
    collapse = md[md.index("## Collapse"):]
    oracle = next(line for line in collapse.splitlines() if line.startswith("| oracle | 0-shot |"))
    assert "weakest: every dimension that applies is at 1.0" in oracle


def test_the_end_of_a_run_prints_the_collapse_table(cli, tmp_path):
    done = cli("run", "wiki_to_travel", "-m", "noop", "--tasks", "1", "--shots", "0", "--out", tmp_path / "run",
               "--no-progress", env={"COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    assert "collapse out of distribution" in done.stdout and "why —" in done.stdout
    assert "weakest" in done.stdout and "transfer ratio: S_id is 0" in done.stdout
    assert any(f"{dim} 0.00" in done.stdout for dim in DIMENSIONS)  # noop's weakest dimension, with its mean
