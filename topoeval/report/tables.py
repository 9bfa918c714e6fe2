"""Terminal tables of a run's summary: success per topology, then every dimension ID vs OOD."""

from __future__ import annotations

from typing import Any

#: Rows of the decision-quality table, in order.
QUALITY_ROWS = ("success", "dq", "clarification", "priority", "risk", "parallelism", "efficiency")


def mean_ci(point: dict[str, Any]) -> str:
    """A curve or matrix point as ``mean [low, high]`` (``—`` without a mean)."""
    if point.get("mean") is None:
        return "—"
    text = f"{point['mean']:.2f}"
    if point.get("ci95"):
        text += f" [{point['ci95'][0]:.2f}, {point['ci95'][1]:.2f}]"
    return text


def fmt_stat(stat: dict[str, Any] | None) -> str:
    """'0.62 ± 0.04' (or '—' when the metric never applied)."""
    if not stat or stat.get("mean") is None:
        return "—"
    return f"{stat['mean']:.2f} ± {stat['std']:.2f}" if stat.get("std") else f"{stat['mean']:.2f}"


def error_mark(cell: dict[str, Any]) -> str:
    """' (2 err)' for a cell with episodes that ended in error (left out of its statistics), else ''."""
    n = cell.get("n_errors") or 0
    return f" ({n} err)" if n else ""


#: The note under a table that has an incomplete cell.
INCOMPLETE_NOTE = ("(N err): N episodes of the cell ended in error (the backend failed, not the model); they are left "
                   "out of its statistics and the cell is incomplete. Run the same command again to retry them.")


def topologies_by_role(cells: list[dict[str, Any]]) -> dict[str, str]:
    """Topology -> role, ID first, then OOD, then ladder steps (a matrix's topologies, in run order)."""
    out: dict[str, str] = {}
    for role in ("id", "ood", "ladder", "matrix"):
        for c in cells:
            if c["role"] == role:
                out.setdefault(c["topology"], role)
    return out


def print_success_table(summary: dict[str, Any], console, metric: str = "success") -> None:
    """Rows: model x baseline; columns: topologies (role in brackets), ID before OOD."""
    from rich.markup import escape
    from rich.table import Table

    cells = summary["cells"]
    topologies = topologies_by_role(cells)
    table = Table(title=f"{summary['protocol']}: {metric} (mean ± std over samples; = marks a tie)")
    table.add_column("model")
    table.add_column("baseline")
    for name, role in topologies.items():
        table.add_column(escape(f"{name} [{role}]"), justify="right")
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for c in cells:
        mark = " =" if c.get("ties") else ""
        text = fmt_stat(c["metrics"].get(metric)) + mark
        if c.get("n_errors"):
            text += f"[bold red]{error_mark(c)}[/bold red]"
        rows.setdefault((c["model"], c["baseline"]), {})[c["topology"]] = text
    for (model, baseline), values in rows.items():
        table.add_row(model, baseline, *(values.get(t, "—") for t in topologies))
    if any(c.get("n_errors") for c in cells):
        table.caption = INCOMPLETE_NOTE
    console.print(table)


#: Columns of the collapse table (report.md and the terminal): "why —" gives the reason for each "—" in its row.
COLLAPSE_COLUMNS = ("model", "baseline", "S_id", "topology", "S_ood", "transfer ratio", "gap", "few-shot recovery",
                    "falls most", "weakest", "why —")


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def collapse_rows(collapse: list[dict[str, Any]]) -> list[list[str]]:
    """One row per collapse entry and OOD topology (:data:`COLLAPSE_COLUMNS`): the numbers, the dimension that
    falls most, the weakest dimension with its OOD mean, and why each "—" of the row is empty (summary.json's
    ``nulls``, fields that share a reason named together)."""
    rows = []
    for e in collapse:
        nulls = e.get("nulls") or {}
        for t, s_ood in e["S_ood"].items():
            dims = (e.get("dimension_collapse") or {}).get(t) or {}
            recovery = e.get("fewshot_recovery")
            reasons: dict[str, list[str]] = {}
            for label, key in (("S_ood", f"S_ood.{t}"), ("transfer ratio", f"transfer_ratio.{t}"),
                               ("gap", f"gap.{t}"), ("few-shot recovery", f"fewshot_recovery.{t}"),
                               ("falls most", f"dimension_collapse.{t}.falls_most"),
                               ("weakest", f"dimension_collapse.{t}.weakest")):
                if key in nulls:
                    reasons.setdefault(nulls[key], []).append(label)
            if recovery is None:
                why = ("measured from this baseline" if e["baseline"] == "0-shot"
                       else "no 0-shot run of this model to measure it from")
                reasons.setdefault(why, []).append("few-shot recovery")
            weakest = dims.get("weakest")
            rows.append([e["model"], e["baseline"], _num(e.get("S_id")), t, _num(s_ood),
                         _num(e["transfer_ratio"].get(t)), _num(e["gap"].get(t)),
                         _num((recovery or {}).get(t)), dims.get("falls_most") or "—",
                         f"{weakest['dimension']} {weakest['mean']:.2f}" if weakest else "—",
                         "; ".join(f"{', '.join(labels)}: {why}" for why, labels in reasons.items()) or ""])
    return rows


def print_collapse_table(summary: dict[str, Any], console) -> None:
    """The collapse table (:func:`collapse_rows`); nothing when the summary has no collapse section."""
    from rich.markup import escape
    from rich.table import Table

    rows = collapse_rows(summary.get("collapse") or [])
    if not rows:
        return
    table = Table(title=f"{summary['protocol']}: collapse out of distribution (— : the reason is in the last column)")
    for col in COLLAPSE_COLUMNS:
        table.add_column(col, justify="right" if col in ("S_id", "S_ood", "transfer ratio", "gap",
                                                         "few-shot recovery") else "left")
    for row in rows:
        table.add_row(*(escape(v) for v in row))
    console.print(table)


def print_quality_table(summary: dict[str, Any], console) -> None:
    """Rows: model x baseline x metric (success, dq, each dimension); columns: topologies.

    Each value is the mean over the tasks where the metric applies, with its n.
    """
    from rich.markup import escape
    from rich.table import Table

    cells = summary["cells"]
    topologies = topologies_by_role(cells)
    table = Table(title=f"{summary['protocol']}: decision quality, ID vs OOD (mean, n tasks where it applies)")
    for col in ("model", "baseline", "metric"):
        table.add_column(col)
    for name, role in topologies.items():
        table.add_column(escape(f"{name} [{role}]"), justify="right")
    by_key: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for c in cells:
        by_key.setdefault((c["model"], c["baseline"]), {})[c["topology"]] = c
    metrics: tuple[str, ...] = QUALITY_ROWS
    if any((c["metrics"].get("collateral") or {}).get("mean") is not None for c in cells):  # beside success
        metrics = (QUALITY_ROWS[0], "collateral", "collateral_irreversible", *QUALITY_ROWS[1:])
    for (model, baseline), per_topo in by_key.items():
        for i, metric in enumerate(metrics):
            values = []
            for t in topologies:
                stat = per_topo.get(t, {}).get("metrics", {}).get(metric)
                text = "—" if not stat or stat.get("mean") is None else f"{stat['mean']:.2f} (n={stat['n']})"
                values.append(text + (error_mark(per_topo[t]) if i == 0 and t in per_topo else ""))
            table.add_row(model if i == 0 else "", baseline if i == 0 else "", metric, *values,
                          end_section=i == len(metrics) - 1)
    if any(c.get("n_errors") for c in cells):
        table.caption = INCOMPLETE_NOTE
    console.print(table)


def print_sensitivity(matrix: dict[str, Any], violations: list[str], console) -> None:
    from rich.table import Table

    from topoeval.analysis.sensitivity import COLUMNS, FLAWS, QUIT_EARLY, unchecked, void_flaws, void_reason

    table = Table(title=f"sensitivity matrix: {matrix['target']} ({matrix['tasks']} tasks; "
                        "mean over tasks where the metric applies, n)")
    table.add_column("policy")
    table.add_column("breaks")
    for col in COLUMNS:
        table.add_column(col, justify="right")
    for policy, row in matrix["cells"].items():
        values = ["—" if v["mean"] is None else f"{v['mean']:.2f} ({v['n']})" for v in row.values()]
        table.add_row(policy, FLAWS.get(policy, "progress" if policy == QUIT_EARLY else ""), *values)
    console.print(table)
    blind = unchecked(matrix)
    void = {FLAWS[p]: p for p in void_flaws(matrix)}
    empty = [d for d in blind if d not in void or not matrix["cells"]["oracle"][d]["n"]]
    if empty:
        console.print(f"cannot check {', '.join(empty)}: no task of this sample gives it a meaning")
    for dim in (d for d in blind if d not in empty):
        console.print(f"cannot check {dim}: with {void_reason(matrix, void[dim])}, {void[dim]} is no flaw")
    if violations:
        console.print(f"[red]bar missed on {matrix['target']}:[/red]")
        for v in violations:
            console.print(f"  {v}")
    else:
        console.print(f"bar met on {matrix['target']}: oracle 1.0 everywhere, noop 0, random dq <= 0.2, "
                      "oracle-quit-early at or under its coverage, each flaw drops its own dimension by >= 0.3 "
                      "and moves no other by more than 0.05" + (" (on the dimensions it can check)" if blind else ""))
