"""A checkpoint sweep shown to a person: the curves' plot, report.md and report.html."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from topoeval.core.files import write_atomic, write_with
from topoeval.report.markdown import NO_TOOL_CALLS_MARK

PLOT = "sweep.png"


def _fmt(p: dict[str, Any]) -> str:
    if p["mean"] is None:
        return "—"
    lo, hi = p["ci95"] or (None, None)
    return f"{p['mean']:.2f} [{lo:.2f}, {hi:.2f}]" if lo is not None else f"{p['mean']:.2f}"


def sweep_table(sweep: dict[str, Any]) -> list[list[str]]:
    """Header and rows: one row per checkpoint, success and dq (mean [95 % CI]) per topology."""
    header = ["step", "model", "weights"] + [f"{c['topology']} ({c['role']}) {m}"
                                  for c in sweep["curves"] for m in ("success", "dq")]
    rows = []
    for i, point in enumerate(sweep["points"]):
        # a point's name in the run (step-2, ...) and what it runs: the model, with its LoRA where it has one
        weights = Path(point["lora"]).name if point.get("lora") else "—"
        rows.append([str(point["step"]), point.get("name") or point["model"], weights]
                    + [_fmt(c[m][i]) for c in sweep["curves"] for m in ("success", "dq")])
    return [header, *rows]


def plot_sweep(sweep: dict[str, Any], path: Path) -> Path:
    """Success and dq against the step, one line per topology, CI bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, metric in zip(axes, ("success", "dq"), strict=True):
        for c in sweep["curves"]:
            pts = [p for p in c[metric] if p["mean"] is not None]
            if not pts:
                continue
            xs = [p["step"] for p in pts]
            line, = ax.plot(xs, [p["mean"] for p in pts], marker="o", label=f"{c['topology']} ({c['role']})",
                            linestyle="-" if c["role"] == "id" else "--")
            if all(p["ci95"] for p in pts):
                ax.fill_between(xs, [p["ci95"][0] for p in pts], [p["ci95"][1] for p in pts], alpha=0.15,
                                color=line.get_color())
        ax.set_xlabel("training step")
        ax.set_ylabel(metric)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{metric} over training ({sweep['baseline']})")
        ax.legend(fontsize=8)
    model = (sweep.get("training") or {}).get("model", "")
    fig.suptitle(f"{sweep['protocol']}: transfer over training {model}".strip())
    fig.tight_layout()
    write_with(path, lambda tmp: fig.savefig(tmp, dpi=90))
    plt.close(fig)
    return path


def _ids(ids: list[str], shown: int = 6) -> str:
    return ", ".join(ids[:shown]) + (f" +{len(ids) - shown} more" if len(ids) > shown else "")


def paired_sentences(sweep: dict[str, Any]) -> list[str]:
    """The sweep's paired sentences: each step against the one before, then the base against each later step."""
    steps = (sweep.get("paired") or {}).get("steps") or []
    return [s["sentence"] for kind in ("consecutive", "from_base") for s in steps if s["kind"] == kind]


def paired_md(sweep: dict[str, Any]) -> list[str]:
    """report.md's ``## What changed, task by task`` ([] for a sweep summary without ``paired``)."""
    paired = sweep.get("paired")
    if not paired:
        return []
    out = ["## What changed, task by task", "",
           f"Paired over the tasks both checkpoints scored: flips 0 → 1 (up) and 1 → 0 (down), McNemar's exact p; "
           f"verdict rule: {paired['rule']}.", "", *[f"- {s}" for s in paired_sentences(sweep)], "",
           "| from | to | topology | up | down | McNemar p | verdict |", "|---|---|---|---|---|---|---|"]
    for kind in ("consecutive", "from_base"):
        for s in paired["steps"]:
            if s["kind"] != kind:
                continue
            for t in s["topologies"]:
                up = f"{t['n_up']}" + (f": {_ids(t['up'])}" if t["up"] else "")
                down = f"{t['n_down']}" + (f": {_ids(t['down'])}" if t["down"] else "")
                verdict = {"b_better": "better", "a_better": "worse"}.get(t["verdict"], "tie")
                out.append(f"| {s['from_step']} | {s['to_step']} | {t['topology']} | {up} | {down} | "
                           f"{t['mcnemar_p']:.2g} | {verdict} |")
    return [*out, ""]


def write_sweep_reports(sweep: dict[str, Any], out: Path) -> list[Path]:
    """``sweep.png``, ``report.md`` and ``report.html`` in ``out``."""
    plot = plot_sweep(sweep, out / PLOT)
    table = sweep_table(sweep)
    t = sweep.get("training") or {}
    if t.get("model"):
        what = f"Checkpoints of `{t['model']}` ({t.get('method', '?')}, every {t.get('every', '?')} steps)"
    elif t.get("checkpoints"):
        what = f"The checkpoints in `{t['checkpoints']}`" + (f" (every {t['every']} steps)" if t.get("every") else "")
    else:
        what = f"{len(sweep['points'])} models as points"
    intro = (f"{what} on "
             f"`{sweep['protocol']}`, baseline {sweep['baseline']}; mean [bootstrap 95 % CI over tasks]. "
             f"Run folder: `{sweep.get('run_dir', '')}`.")
    shape = [f"- {s['sentence']}" for s in sweep.get("shapes", [])]
    corr = [f"- {c['sentence']}" for c in sweep.get("correlations", [])]
    peaks = shape + corr
    notice = sweep.get("no_tool_calls")  # a point that never calls a tool: its curve measures the call format
    md = [f"# Transfer over training: {sweep['protocol']}", "", intro, "",
          *([f"{NO_TOOL_CALLS_MARK} {notice}", ""] if notice else []), f"![curves]({PLOT})", "",
          "| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
    md += ["| " + " | ".join(r) + " |" for r in table[1:]]
    md += ["", "## The shape", "", "Peaks (the tie rule: a difference under 2 × the larger noise of the two points "
           "is a tie):", "", *shape, "", "ID–OOD correlation over the steps:", "", *corr, ""]
    md += paired_md(sweep)
    write_atomic(out / "report.md", "\n".join(md))
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r) + "</tr>" for r in table[1:])
    page = (f"<!doctype html><meta charset='utf-8'><title>sweep {html.escape(sweep['protocol'])}</title>"
            f"<h1>Transfer over training: {html.escape(sweep['protocol'])}</h1><p>{html.escape(intro)}</p>"
            + (f"<p class='warn'><b>No tool calls.</b> {html.escape(notice)}</p>" if notice else "")
            + f"<img src='{PLOT}' alt='curves'><table border='1' cellspacing='0' cellpadding='3'><tr>"
            + "".join(f"<th>{html.escape(h)}</th>" for h in table[0]) + f"</tr>{cells}</table><ul>"
            + "".join(f"<li>{html.escape(p[2:])}</li>" for p in peaks) + "</ul>"
            + ("<h2>What changed, task by task</h2><ul>" + "".join(f"<li>{html.escape(x)}</li>"
                                                                 for x in paired_sentences(sweep)) + "</ul>"
               if sweep.get("paired") else ""))
    write_atomic(out / "report.html", page)
    return [plot, out / "report.md", out / "report.html"]
