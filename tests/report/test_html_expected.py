"""report.html shows a failed episode's final answer beside the suite's expected answer, where the episode record
carries one (``expected_answer``; issue 60), in headless Chromium; a solved episode shows no such line."""

import json

import pytest

import topoeval
from tests.report.test_html import CHROMIUM, chromium, console_lines
from topoeval.report.html import render_report_html
from topoeval.runner.store import read_episodes


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed here (.ci/run installs Debian's chromium)")
def test_a_failed_episode_shows_the_expected_answer(tmp_path):
    out = tmp_path / "run"
    topoeval.run_protocol("wiki_hops", ["noop", "oracle"], out, tasks=1, shots=[0])
    records = [{**r, "expected_answer": f"gold-of-{r['task_id']}"} for r in read_episodes(out)]
    summary = json.loads((out / "summary.json").read_text())
    page = tmp_path / "report.html"
    page.write_text(render_report_html(summary, records, []))
    cells = [f"{c['model']}|{c['topology']}" for c in summary["cells"]]
    noop, oracle = cells.index("noop|wiki-1-2hop"), cells.index("oracle|wiki-1-2hop")
    task = next(r["task_id"] for r in records if r["model"] == "noop" and r["topology"] == "wiki-1-2hop")
    failed = chromium(page.as_uri() + f"#cell={noop}&episode=0", tmp_path, "--dump-dom")
    console_lines(failed)
    assert f"final answer: (none)\nexpected: gold-of-{task}" in failed.stdout
    solved = chromium(page.as_uri() + f"#cell={oracle}&episode=0", tmp_path, "--dump-dom")
    console_lines(solved)
    assert "expected: gold-of-" not in solved.stdout
