"""``report.md``: the run's tables in Markdown (ID vs OOD success, dimensions, training-signal
diagnostics, collapse, few-shot recovery); a transfer-matrix run's matrix first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.analysis.collapse import QUALITY
from topoeval.analysis.diagnostics import no_tool_call_notice
from topoeval.core.files import write_atomic
from topoeval.report.collateral import COLLATERAL_ROWS, collateral_defined, collateral_md
from topoeval.report.matrix import matrix_md
from topoeval.report.tables import COLLAPSE_COLUMNS, INCOMPLETE_NOTE, collapse_rows, error_mark, topologies_by_role

#: How report.md starts the paragraph that says a model never called a tool (report.html shows it as a warning).
NO_TOOL_CALLS_MARK = "**No tool calls.**"


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
    lines += matrix_md(summary.get("matrix"), cells)  # a transfer matrix comes first
    heading = "## Success, ID vs OOD" if not summary.get("matrix") else "## Success per topology"
    lines += [heading, "", _row(["model", "baseline", *(f"{t} ({r})" for t, r in topos)]),
              _row(["---"] * (2 + len(topos)))]
    for (model, baseline), per in by_key.items():
        vals = [(_stat(per[t]["metrics"].get("success")) + (" =" if per[t].get("ties") else "") + error_mark(per[t]))
                if t in per else "—" for t, _ in topos]
        lines.append(_row([model, baseline, *vals]))
    if any(c.get("n_errors") for c in cells):
        lines += ["", f"**Incomplete.** {INCOMPLETE_NOTE}"]
    notice = no_tool_call_notice(cells)
    if notice:
        lines += ["", f"{NO_TOOL_CALLS_MARK} {notice}"]
    lines += collateral_md(by_key, topos)
    lines += ["", "## Decision quality (mean over the tasks where it applies, n)", "",
              _row(["model", "baseline", "metric", *(f"{t} ({r})" for t, r in topos)]),
              _row(["---"] * (3 + len(topos)))]
    for (model, baseline), per in by_key.items():
        for metric in ("success", *(COLLATERAL_ROWS if collateral_defined(cells) else ()), *QUALITY):
            vals = []
            for t, _ in topos:
                stat = per.get(t, {}).get("metrics", {}).get(metric)
                vals.append("—" if not stat or stat.get("mean") is None else f"{stat['mean']:.2f} (n={stat['n']})")
            lines.append(_row([model, baseline, metric, *vals]))
    lines += diagnostics_md(cells)
    lines += user_md(cells)
    collapse = summary.get("collapse") or []
    if collapse:
        lines += ["", "## Collapse", "",
                  "Falls most: the dimension with the largest ID − OOD drop; weakest: the dimension with the lowest "
                  "OOD mean (whether or not the ID topology has it); why —: the reason for each empty value of the "
                  "row.", "", _row(list(COLLAPSE_COLUMNS)), _row(["---"] * len(COLLAPSE_COLUMNS))]
        lines += [_row([v.replace("|", "/") for v in row]) for row in collapse_rows(collapse)]
    ladders = summary.get("ladder") or []
    if ladders:
        steps = [p["topology"] + (f" ({p['axis']})" if p["axis"] else "")
                 for p in ladders[0]["metrics"]["success"]["curve"]]
        lines += ["", "## Ladder", "",
                  _row(["model", "baseline", "metric", *steps, "shape", "breaking axis", "loss by axis"]),
                  _row(["---"] * (6 + len(steps)))]
        for e in ladders:
            for metric, m in e["metrics"].items():
                # the loss each axis's steps carry (a format-shift step's axis is `format`)
                by_axis = ", ".join(f"{a} {d:.2f}" for a, d in (m.get("drop_by_axis") or {}).items())
                lines.append(_row([e["model"], e["baseline"], metric, *(_f(p["mean"]) for p in m["curve"]),
                                   m["shape"], m["breaking_axis"] or "—", by_axis or "—"]))
    return "\n".join(lines) + "\n"


def diagnostics_md(cells: list[dict[str, Any]]) -> list[str]:
    """The training-signal diagnostics of every cell (docs/metrics.md): the k-sample columns read
    '—' when the cell has fewer than 2 samples per task."""
    rows = [c for c in cells if c.get("diagnostics")]
    if not rows:
        return []
    out = ["", "## Training-signal diagnostics", "",
           "k = samples per task. Zero-signal: share of tasks whose k samples all got the same success (no "
           "group-relative RL gradient). Diversity: distinct tool-call sequences / k. Calls, invalid and redundant: "
           "per episode. Tokens: mean completion tokens of successful / failed episodes.", "",
           _row(["model", "baseline", "topology", "k", "zero-signal", "pass@k − pass@1", "diversity", "calls",
                 "invalid", "redundant", "tokens (success)", "tokens (failure)"]), _row(["---"] * 12)]
    for c in rows:
        d = c["diagnostics"]
        tokens = d["completion_tokens"]
        out.append(_row([c["model"], c["baseline"], c["topology"], str(d["samples"]), _f(d["zero_signal_share"]),
                         _f(d["pass_gap"]), _f(d["trajectory_diversity"]), _f(d["tool_calls"], 1),
                         _f(d["invalid_calls"], 1), _f(d["redundant_calls"], 1),
                         f"{_f(tokens['success'], 0)} (n={tokens['n_success']})",
                         f"{_f(tokens['failure'], 0)} (n={tokens['n_failure']})"]))
    return out


def user_md(cells: list[dict[str, Any]]) -> list[str]:
    """Questions to the simulated user per episode and the share it could not map, on the cells that asked."""
    rows = [c for c in cells if (c.get("diagnostics") or {}).get("questions")]
    if not rows:
        return []
    out = ["", "## Questions to the simulated user", "",
           "Per episode: questions asked (ask_user, confirmations excluded) and those the user could map to "
           "nothing it knows (answered \"I'm not sure what you mean.\"). A high unanswered share means low "
           "clarification may be the simulator's failure, not the model's.", "",
           _row(["model", "baseline", "topology", "questions", "unanswered", "unanswered share"]), _row(["---"] * 6)]
    for c in rows:
        d = c["diagnostics"]
        share = (d.get("unanswered_questions") or 0.0) / d["questions"]
        out.append(_row([c["model"], c["baseline"], c["topology"], _f(d["questions"], 2),
                         _f(d.get("unanswered_questions"), 2), _f(share)]))
    return out


def write_report_md(summary: dict[str, Any], path: str | Path) -> None:
    write_atomic(path, render_report_md(summary))
