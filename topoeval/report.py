"""Terminal tables of a run's summary."""

from __future__ import annotations

from typing import Any


def fmt_stat(stat: dict[str, Any] | None) -> str:
    """'0.62 ± 0.04' (or '—' when the metric never applied)."""
    if not stat or stat.get("mean") is None:
        return "—"
    return f"{stat['mean']:.2f} ± {stat['std']:.2f}" if stat.get("std") else f"{stat['mean']:.2f}"


def print_success_table(summary: dict[str, Any], console, metric: str = "success") -> None:
    """Rows: model x baseline; columns: topologies (role in brackets), ID before OOD."""
    from rich.markup import escape
    from rich.table import Table

    cells = summary["cells"]
    topologies: dict[str, str] = {}
    for role in ("id", "ood", "ladder"):
        for c in cells:
            if c["role"] == role:
                topologies.setdefault(c["topology"], role)
    table = Table(title=f"{summary['protocol']}: {metric} (mean ± std over samples)")
    table.add_column("model")
    table.add_column("baseline")
    for name, role in topologies.items():
        table.add_column(escape(f"{name} [{role}]"), justify="right")
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for c in cells:
        rows.setdefault((c["model"], c["baseline"]), {})[c["topology"]] = fmt_stat(c["metrics"].get(metric))
    for (model, baseline), values in rows.items():
        table.add_row(model, baseline, *(values.get(t, "—") for t in topologies))
    console.print(table)
