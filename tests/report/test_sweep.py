"""The sweep report's "What changed, task by task": the paired sentences and table in report.md and report.html."""

from tests.analysis.test_sweep_paired import POINTS, RECORDS
from topoeval.analysis.summary import build_summary
from topoeval.analysis.sweep import sweep_curves
from topoeval.report.sweep import paired_md, write_sweep_reports


def test_report_md_and_html_say_what_each_stretch_of_training_changed_with_task_counts(tmp_path):
    sweep = sweep_curves(build_summary("proto", RECORDS), POINTS, records=RECORDS)
    write_sweep_reports(sweep, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "## What changed, task by task" in md
    line = next(x for x in md.splitlines() if x.startswith("- From step 0 to step 100: "))
    assert "learned wiki (8 up, 0 down of 12 tasks, McNemar p = 0.0078)" in line
    assert "forgot nothing on travel (0 up, 0 down of 12 tasks)" in line
    assert "| 0 | 100 | wiki | 8: t02, t03, t04, t05, t06, t07 +2 more | 0 | 0.0078 | better |" in md
    assert "| 100 | 200 | travel | 0 | 5: t01, t02, t03, t04, t05 | 0.062 | tie |" in md
    html = (tmp_path / "report.html").read_text()
    assert "<h2>What changed, task by task</h2>" in html and "learned wiki (8 up, 0 down of 12 tasks" in html


def test_a_sweep_summary_without_records_has_no_paired_section():
    assert paired_md(sweep_curves(build_summary("proto", RECORDS), POINTS)) == []


def test_a_point_that_never_calls_a_tool_is_said_at_the_top_of_the_sweep_report(tmp_path):
    """Issue 60: a flat curve of a point that never made a valid tool call reads as "training did nothing"; the
    sweep's summary and reports say what it measures instead. A point that calls tools gets no such line."""
    from topoeval.report.markdown import NO_TOOL_CALLS_MARK

    sweep = sweep_curves(build_summary("proto", RECORDS), POINTS)  # the hand-made records hold no tool call
    assert "base · 0-shot · wiki (12 of 12)" in sweep["no_tool_calls"] and "--tool-format" in sweep["no_tool_calls"]
    write_sweep_reports(sweep, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert f"{NO_TOOL_CALLS_MARK} No valid tool call in at least 80% of the episodes of base" in md
    assert "<p class='warn'><b>No tool calls.</b> No valid tool call" in (tmp_path / "report.html").read_text()
    calling = [{**r, "scores": {**r["scores"], "tool_calls": 2, "invalid_calls": 0}} for r in RECORDS]
    sweep = sweep_curves(build_summary("proto", calling), POINTS)
    assert sweep["no_tool_calls"] is None
    write_sweep_reports(sweep, tmp_path)
    assert NO_TOOL_CALLS_MARK not in (tmp_path / "report.md").read_text()
