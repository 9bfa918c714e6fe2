"""Collateral damage in the reports (topoeval/report/collateral.py): beside success in report.md, report.html
(its tables, headline and episode browser), the transfer matrix's section and the terminal's quality table —
only when a cell defines it, '— (no scope)' with its reason where a suite defines none, never 0."""

from __future__ import annotations

import html
import io
import json
import re

import pytest
from rich.console import Console

import topoeval
from tests.conftest import COLLATERAL_TASKS as TASKS  # the collateral_run fixture's
from tests.report.test_html import CHROMIUM, chromium, console_lines
from topoeval.analysis.summary import NO_COLLATERAL_SCOPE
from topoeval.report.html import render_report_html
from topoeval.report.markdown import render_report_md
from topoeval.report.matrix import matrix_md
from topoeval.report.tables import print_quality_table
from topoeval.runner.store import read_episodes


def summary_of(run_dir):
    return json.loads((run_dir / "summary.json").read_text())


def table(md: str, heading: str) -> list[list[str]]:
    """The rows (header first) of the first table under ``heading``."""
    part = md[md.index(heading):]
    rows, started = [], False
    for line in part.splitlines()[1:]:
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):
                rows.append(cells)
        elif started:
            break
    return rows


def test_report_md_puts_collateral_beside_success_with_its_ci_and_n(collateral_run):
    summary = summary_of(collateral_run)
    md = (collateral_run / "report.md").read_text()
    assert md == render_report_md(summary)
    assert md.index("## Success, ID vs OOD") < md.index("## Collateral damage, beside success") < md.index(
        "## Decision quality")
    rows = table(md, "## Collateral damage, beside success")
    assert rows[0] == ["model", "baseline", "wiki (id)", "travel (ood)"]
    by_model = {r[0]: r for r in rows[1:]}
    cells = {(c["model"], c["topology"]): c for c in summary["cells"]}
    for model in ("oracle", "oracle-collateral"):
        cell = cells[(model, "travel")]
        rate, irr = cell["metrics"]["collateral"], cell["metrics"]["collateral_irreversible"]
        assert by_model[model][3] == (
            f"{rate['mean']:.2f} [{rate['ci95'][0]:.2f}, {rate['ci95'][1]:.2f}]; irreversible {irr['mean']:.2f} "
            f"[{irr['ci95'][0]:.2f}, {irr['ci95'][1]:.2f}]; n={TASKS}")
        assert by_model[model][2] == "— (no scope)"  # wiki defines none: not 0
    assert by_model["oracle"][3].startswith("0.00 [0.00, 0.00]")
    assert by_model["oracle-collateral"][3].startswith("1.00 [1.00, 1.00]")  # the reference damages every episode
    assert f"— (no scope): {NO_COLLATERAL_SCOPE}." in md
    # the decision-quality table gets its rows right after success; success itself is untouched
    quality = table(md, "## Decision quality")
    metrics = [r[2] for r in quality[1:] if r[0] == "oracle-collateral"]
    assert metrics[:3] == ["success", "collateral", "collateral_irreversible"]
    success = cells[("oracle-collateral", "travel")]["metrics"]["success"]
    assert [r[4] for r in quality[1:] if r[0] == "oracle-collateral" and r[2] == "success"] == [
        f"{success['mean']:.2f} (n={TASKS})"]


def test_a_run_where_no_suite_defines_collateral_has_no_collateral_section_or_row(tmp_path):
    topoeval.run_protocol("wiki_hops", ["oracle"], tmp_path / "run", tasks=1, shots=[0])
    md = (tmp_path / "run" / "report.md").read_text()
    assert "Collateral" not in md and "| collateral |" not in md
    page = (tmp_path / "run" / "report.html").read_text()
    assert "<th>collateral</th>" not in page and "collateral_irreversible" not in page.split('id="data"')[0]


def test_report_html_shows_collateral_in_its_tables_headline_and_browser(collateral_run):
    summary = summary_of(collateral_run)
    page = render_report_html(summary, read_episodes(collateral_run), [])
    assert "<h2>Collateral damage, beside success</h2>" in page
    headline = page[page.index('<section id="headline">'):page.index("</section>")]
    cols = re.findall(r'<td class="num collateral">(.*?)</td>', headline)
    assert cols == ["wiki: — (no scope)<br>travel: 0.00 [0.00, 0.00] (n=3)",
                    "wiki: — (no scope)<br>travel: 1.00 [1.00, 1.00] (n=3)"]
    data = json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1).replace("<\\/", "</"))
    by_label = {c["label"].split(" (")[0]: c["episodes"] for c in data["cells"]}
    damaged = by_label["oracle-collateral · 0-shot · travel"]
    records = {(r["task_id"]): r for r in read_episodes(collateral_run)
               if r["model"] == "oracle-collateral" and r["topology"] == "travel"}
    for ep in damaged:
        want = [e for e in records[ep["task_id"]]["collateral"]["entities"] if e["kind"] == "collateral"]
        assert [d["entity"] for d in ep["collateral"]] == [e["entity"] for e in want] and want
        assert [d["reversible"] for d in ep["collateral"]] == [e["reversible"] for e in want]
        assert [d["calls"] for d in ep["collateral"]] == [e["calls"] for e in want]
    assert all(ep["collateral"] == [] for ep in by_label["oracle · 0-shot · travel"])
    assert all(ep["collateral"] is None for ep in by_label["oracle · 0-shot · wiki"])


def test_the_terminal_quality_table_has_the_collateral_rows(collateral_run):
    out = io.StringIO()
    print_quality_table(summary_of(collateral_run), Console(file=out, width=200))
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.getvalue().splitlines() if "│" in line]
    metrics = [r for r in rows if r[2] in ("collateral", "collateral_irreversible")]
    assert len(metrics) == 4  # 2 models x (rate, irreversible), right after success
    assert all(r[3] == "—" and r[4] in ("0.00 (n=3)", "1.00 (n=3)") for r in metrics)  # wiki: none
    assert [r[2] for r in rows][:3] == ["success", "collateral", "collateral_irreversible"]


def point(mean):
    return {"mean": mean, "ci95": [mean, mean] if mean is not None else None, "n": 2 if mean is not None else 0}


def matrix_cell(model, topology, collateral):
    metrics = {"success": point(1.0)}
    if collateral is not None:
        metrics |= {"collateral": point(collateral), "collateral_irreversible": point(collateral / 2)}
    return {"model": model, "baseline": "0-shot", "topology": topology, "metrics": metrics,
            "collateral_episodes": 2 if collateral is not None else 0,
            "nulls": {} if collateral is not None else {"metrics.collateral": NO_COLLATERAL_SCOPE}}


def matrix_of(rows):
    return {"topologies": ["wiki", "travel"], "rows": [
        {"model": m, "baseline": "0-shot", "train_topology": t,
         "cells": {x: {"success": point(1.0), "dq": point(1.0)} for x in ("wiki", "travel")},
         "transfer_ratio": {"success": {}, "dq": {}}, "nulls": {}, "own": {"success": 1.0, "dq": 1.0}}
        for m, t in rows], "attribution": {}}


def test_the_matrix_section_has_a_collateral_table_beside_success():
    cells = [matrix_cell("a", "wiki", None), matrix_cell("a", "travel", 0.5),
             matrix_cell("b", "wiki", None), matrix_cell("b", "travel", 0.0)]
    md = "\n".join(matrix_md(matrix_of([("a", "travel"), ("b", None)]), cells))
    assert md.index("### dq") < md.index("### collateral (beside success)")
    rows = table(md, "### collateral (beside success)")
    assert rows[0] == ["model", "baseline", "trained on", "wiki", "travel"]
    assert rows[1] == ["a", "0-shot", "travel", "— (no scope)",
                       "0.50 [0.50, 0.50]; irreversible 0.25 [0.25, 0.25]; n=2 *"]
    assert rows[2] == ["b", "0-shot", "—", "— (no scope)", "0.00 [0.00, 0.00]; irreversible 0.00 [0.00, 0.00]; n=2"]
    assert f"— (no scope): {NO_COLLATERAL_SCOPE}." in md
    # no cell defines it: no table; without the run's cells (an older caller): none either
    assert "collateral" not in "\n".join(matrix_md(matrix_of([("a", "travel")]), [matrix_cell("a", "wiki", None)]))
    assert "collateral" not in "\n".join(matrix_md(matrix_of([("a", "travel")])))


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed here (.ci/run installs Debian's chromium)")
def test_report_html_browser_shows_an_episodes_collateral_entities(collateral_run, tmp_path):
    cells = [(c["model"], c["topology"]) for c in summary_of(collateral_run)["cells"]]
    ci = cells.index(("oracle-collateral", "travel"))
    proc = chromium((collateral_run / "report.html").as_uri() + f"#cell={ci}&episode=0", tmp_path, "--dump-dom")
    console_lines(proc)
    rec = next(r for r in read_episodes(collateral_run)
               if (r["model"], r["topology"]) == ("oracle-collateral", "travel")
               and r["task_id"].split("/")[-1].startswith("0-"))
    damage = [e for e in rec["collateral"]["entities"] if e["kind"] == "collateral"]
    shown = re.findall(r'<pre class="collateral">(.*?)</pre>', proc.stdout)
    assert f"collateral damage ({len(damage)} entities outside the task's scope)" in proc.stdout
    assert [html.unescape(s) for s in shown] == [
        f"{e['entity']} — {'reversible' if e['reversible'] else 'IRREVERSIBLE'}, written by call(s) "
        + ", ".join(f"#{i} {rec['calls'][i]['name']}" for i in e["calls"])
        + f": {json.dumps(e['before'])} → {json.dumps(e['after'])}" for e in damage]
