"""Everything a run folder shows a person: report.md, the PNG plots and report.html."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from topoeval.report.html import write_report_html
from topoeval.report.markdown import write_report_md
from topoeval.report.plots import write_plots


def write_run_reports(summary: dict[str, Any], records: Iterable[dict[str, Any]], run_dir: Path) -> list[Path]:
    """Write report.md, plot_*.png and report.html into ``run_dir``; returns the paths written. ``records``
    are read once, for the episode browser's bounded sample."""
    write_report_md(summary, run_dir / "report.md")
    plots = write_plots(summary, run_dir)
    html = write_report_html(summary, records, run_dir, plots)
    return [run_dir / "report.md", *plots, html]
