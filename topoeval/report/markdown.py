"""``report.md``: the run's tables in Markdown (ID vs OOD success, dimensions, collapse, few-shot recovery)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.analysis.collapse import QUALITY
from topoeval.report.tables import INCOMPLETE_NOTE, error_mark, topologies_by_role


def _f(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _stat(stat: dict[str, Any] | None) -> str:
    if not stat or stat.get("mean") is None:
        return "—"
    text = f"{stat['mean']:.2f}"
    if stat.get("std"):
        text += f" ± {stat['std']:.2f}"
    if stat.get("ci95"):
        text += f" [{stat['ci95'][0]:.2f}, {stat['ci95'][1]:.2f}]"
    return text


def _row(values: list[str]) -> str:
    return "| " + " | ".join(values) + " |"


def render_report_md(summary: dict[str, Any]) -> str:
    cells = summary["cells"]
    topos = list(topologies_by_role(cells).items())
    by_key: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for c in cells:
        by_key.setdefault((c["model"], c["baseline"]), {})[c["topology"]] = c
    lines = [f"# {summary['protocol']} — run {summary.get('run_id', '')}", ""]
    lines += [f"Protocol sha256 `{summary.get('protocol_sha256', '')[:16]}`, task set sha256 "
              f"`{summary.get('task_set_sha256', '')[:16]}`. Success: mean ± std across samples [bootstrap 95 % CI "
              "over tasks]; `=` marks a tie (difference < 2 × the larger std).", ""]
    lines += ["## Success, ID vs OOD", "", _row(["model", "baseline", *(f"{t} ({r})" for t, r in topos)]),
              _row(["---"] * (2 + len(topos)))]
    for (model, baseline), per in by_key.items():
        vals = [(_stat(per[t]["metrics"].get("success")) + (" =" if per[t].get("ties") else "") + error_mark(per[t]))
                if t in per else "—" for t, _ in topos]
        lines.append(_row([model, baseline, *vals]))
    if any(c.get("n_errors") for c in cells):
        lines += ["", f"**Incomplete.** {INCOMPLETE_NOTE}"]
    lines += ["", "## Decision quality (mean over the tasks where it applies, n)", "",
              _row(["model", "baseline", "metric", *(f"{t} ({r})" for t, r in topos)]), _row(["---"] * (3 + len(topos)))]
    for (model, baseline), per in by_key.items():
        for metric in ("success", *QUALITY):
            vals = []
            for t, _ in topos:
                stat = per.get(t, {}).get("metrics", {}).get(metric)
                vals.append("—" if not stat or stat.get("mean") is None else f"{stat['mean']:.2f} (n={stat['n']})")
            lines.append(_row([model, baseline, metric, *vals]))
    collapse = summary.get("collapse") or []
    if collapse:
        lines += ["", "## Collapse", "", _row(["model", "baseline", "S_id", "topology", "S_ood", "transfer ratio", "gap",
                                                "few-shot recovery", "falls most"]), _row(["---"] * 9)]
        for e in collapse:
            for t, s in e["S_ood"].items():
                rec = (e.get("fewshot_recovery") or {}).get(t)
                worst = e["dimension_collapse"].get(t, {}).get("falls_most") or "—"
                lines.append(_row([e["model"], e["baseline"], _f(e["S_id"]), t, _f(s), _f(e["transfer_ratio"][t]),
                                   _f(e["gap"][t]), _f(rec), worst]))
    ladders = summary.get("ladder") or []
    if ladders:
        steps = [p["topology"] + (f" ({p['axis']})" if p["axis"] else "") for p in ladders[0]["metrics"]["success"]["curve"]]
        lines += ["", "## Ladder", "", _row(["model", "baseline", "metric", *steps, "shape", "breaking axis"]),
                  _row(["---"] * (5 + len(steps)))]
        for e in ladders:
            for metric, m in e["metrics"].items():
                lines.append(_row([e["model"], e["baseline"], metric, *(_f(p["mean"]) for p in m["curve"]),
                                   m["shape"], m["breaking_axis"] or "—"]))
    return "\n".join(lines) + "\n"


def write_report_md(summary: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(render_report_md(summary), encoding="utf-8")
