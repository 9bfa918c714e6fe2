"""The transfer matrix in the reports: a Markdown section (report.md, report.html) and ``matrix.png``.

Rows are models (× baseline), columns topologies; a model's own topology (its diagonal) is marked
``*`` in the tables and outlined in the heatmaps (success, dq); each cell shows mean [95 % CI] (n). Ratios that the
tie rule leaves undefined read "—" with their reason listed under the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.analysis.matrix import NOT_SEPARABLE
from topoeval.core.files import write_with
from topoeval.report.axis_effects import axis_effects_md, descriptors_md, print_axis_effects, print_descriptor_fit
from topoeval.report.collateral import matrix_collateral_md
from topoeval.report.tables import mean_ci


def _f(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _cell(point: dict[str, Any]) -> str:
    text = mean_ci(point)
    return text if point.get("mean") is None else text + f" (n={point.get('n', 0)})"


def _row(values: list[str]) -> str:
    return "| " + " | ".join(values) + " |"


def matrix_md(matrix: dict[str, Any] | None, cells: list[dict[str, Any]] | None = None) -> list[str]:
    """report.md's ``## Transfer matrix`` section (success, dq, with the run's ``cells`` collateral damage beside
    them where any cell defines it, transfer ratios, axis attribution); [] when none."""
    if not matrix or not matrix.get("rows"):
        return []
    topos = matrix["topologies"]
    out = ["## Transfer matrix", "",
           "Every model on every topology: mean [bootstrap 95 % CI over tasks] (n tasks); `*` marks the model's own "
           "(train) topology, the diagonal. A model trained on none of them has no diagonal.", ""]
    for metric in ("success", "dq"):
        out += [f"### {metric}", "", _row(["model", "baseline", "trained on", *topos]),
                _row(["---"] * (3 + len(topos)))]
        for r in matrix["rows"]:
            vals = [_cell(r["cells"][t][metric]) + (" *" if t == r["train_topology"] else "") for t in topos]
            out.append(_row([r["model"], r["baseline"], r["train_topology"] or "—", *vals]))
        out.append("")
    out += matrix_collateral_md(matrix, cells or [])
    trained = [r for r in matrix["rows"] if r["train_topology"]]
    if trained:
        out += ["### Transfer ratio (success on the topology / success on the model's own)", "",
                _row(["model", "baseline", "own", *topos]), _row(["---"] * (3 + len(topos)))]
        reasons: list[str] = []
        for r in trained:
            vals = []
            for t in topos:
                if t == r["train_topology"]:
                    vals.append("*")
                    continue
                vals.append(_f(r["transfer_ratio"]["success"].get(t)))
                why = r["nulls"].get(f"transfer_ratio.success.{t}")
                if why:
                    reasons.append(f"- {r['model']} ({r['baseline']}) → {t}: {why}")
            out.append(_row([r["model"], r["baseline"], f"{r['train_topology']} {_f(r['own']['success'])}", *vals]))
        out += [""] + (["Undefined ratios (—):", "", *reasons, ""] if reasons else [])
    for baseline, fit in (matrix.get("attribution") or {}).items():
        out += [f"### Loss by topology axis ({baseline}, success)", "",
                f"Non-negative least squares of each off-diagonal loss (own − cell) on the axes that differ "
                f"between the model's train topology and the cell's topology, over {fit['n_pairs']} pair(s) "
                "(docs/collapse-report.md); *marginal*: mean loss where the axis differs minus where it does not.", ""]
        if fit["axes"]:
            out += [_row(["axis", "loss", "pairs where it differs", "marginal", "note"]), _row(["---"] * 5)]
            out += [_row([a, _f(v["loss"]), str(v["n_pairs"]), _f(v["marginal"]), attribution_note(v)])
                    for a, v in fit["axes"].items()]
            out.append("")
        if fit.get("caveat"):
            out += [f"Caveat: {fit['caveat']}.", ""]
    return (out + axis_effects_md(matrix.get("axis_effects")) + descriptors_md(matrix)
            + paired_md(matrix.get("paired"), topos))


def attribution_note(entry: dict[str, Any]) -> str:
    """A row of the loss-by-axis table: empty for one axis; for axes that differ in exactly the same pairs,
    that the design cannot separate them (their loss is the group's, together)."""
    return "" if entry.get("separable", True) else NOT_SEPARABLE


def _verdict(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "—"
    word = {"b_better": "better", "a_better": "worse"}.get(entry["verdict"], "tie")
    return f"{word} ({entry['n_up']}↑ {entry['n_down']}↓ of {entry['n_pairs']}, p={entry['mcnemar_p']:.2g})"


def paired_md(paired: dict[str, Any] | None, topos: list[str]) -> list[str]:
    """``### Against the base, task by task``: each trained model's paired verdict against its base on every
    topology (↑ tasks it solves that the base did not, ↓ the reverse, McNemar's exact p); [] without ``paired``."""
    if not paired:
        return []
    out = ["### Against the base, task by task", ""]
    if paired.get("base") is None:
        return [*out, f"No paired comparison: {paired.get('why')}.", ""]
    out += [f"Each trained model against `{paired['base']}` ({paired['base_source']}), paired over the tasks both "
            f"scored; verdict rule: {paired['rule']}.", "",
            _row(["model", "baseline", "trained on", *topos]), _row(["---"] * (3 + len(topos)))]
    for r in paired["rows"]:
        by_topology = {e["topology"]: e for e in r["topologies"]}
        out.append(_row([r["model"], r["baseline"], r["train_topology"],
                         *[_verdict(by_topology.get(t)) for t in topos]]))
    return [*out, ""]


def plot_matrix(summary: dict[str, Any], path: Path) -> Path | None:
    """``matrix.png``: success and dq per model × topology as two heatmaps, each cell's mean, 95 % CI and n
    (tasks) written in it (a [1.00, 1.00] interval at n = 2 is not certainty), the model's own topology
    outlined in red; None when the run is not a matrix."""
    matrix = summary.get("matrix") or {}
    rows = matrix.get("rows") or []
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    topos = matrix["topologies"]
    several = len({r["baseline"] for r in rows}) > 1
    labels = [r["model"] + (f" · {r['baseline']}" if several else "") for r in rows]
    width = 1.45 * len(topos)
    fig, axes = plt.subplots(1, 2, figsize=(2.4 + 2 * width, 1.6 + 0.7 * len(rows)), dpi=110, squeeze=False)
    for ax, metric in zip(axes[0], ("success", "dq"), strict=True):
        image = _heatmap(ax, rows, topos, metric)
        ax.set_yticks(range(len(rows)), labels if metric == "success" else [""] * len(rows), fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    fig.suptitle("transfer matrix: mean [95 % CI], n tasks; red outline = the model's own topology", fontsize=9)
    fig.tight_layout()
    write_with(path, fig.savefig)
    plt.close(fig)
    return path


def _heatmap(ax: Any, rows: list[dict[str, Any]], topos: list[str], metric: str) -> Any:
    from matplotlib.patches import Rectangle

    values = [[(r["cells"][t][metric]["mean"] if r["cells"][t][metric]["mean"] is not None else float("nan"))
               for t in topos] for r in rows]
    image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    for i, r in enumerate(rows):
        for j, t in enumerate(topos):
            point = r["cells"][t][metric]
            if point["mean"] is None:
                text, color = "—", "black"
            else:
                ci = point.get("ci95")
                text = (f"{point['mean']:.2f}" + (f"\n[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
                        + f"\nn={point.get('n', 0)}")
                color = "black" if point["mean"] > 0.6 else "white"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
            if t == r["train_topology"]:
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.2))
    ax.set_xticks(range(len(topos)), topos, rotation=30, ha="right", fontsize=8)
    ax.set_title(metric, fontsize=9)
    return image


def print_matrix_table(matrix: dict[str, Any] | None, console) -> None:
    """The matrix on the terminal (``topoeval run`` of a matrix, ``topoeval compare``): success [95 % CI] per
    model × topology, ``*`` on the model's own topology, ``×r`` the transfer ratio where it is defined."""
    if not matrix or not matrix.get("rows"):
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="transfer matrix: success [95 % CI], * own topology, ×ratio to it (— undefined: own ties "
                        "with 0)")
    for name in ("model", "baseline", "trained on", *matrix["topologies"]):
        table.add_column(escape(name), justify="left" if name in ("model", "baseline", "trained on") else "right")
    for r in matrix["rows"]:
        vals = []
        for t in matrix["topologies"]:
            point = r["cells"][t]["success"]
            text = "—" if point["mean"] is None else f"{point['mean']:.2f}" + (
                f" [{point['ci95'][0]:.2f}, {point['ci95'][1]:.2f}]" if point.get("ci95") else "")
            if t == r["train_topology"]:
                text += " *"
            elif r["train_topology"]:
                ratio = r["transfer_ratio"]["success"].get(t)
                text += f" ×{ratio:.2f}" if ratio is not None else " ×—"
            vals.append(escape(text))
        table.add_row(escape(r["model"]), r["baseline"], escape(r["train_topology"] or "—"), *vals)
    console.print(table)
    for baseline, fit in (matrix.get("attribution") or {}).items():
        if not fit.get("axes"):
            continue
        lines = [f"  {escape(a)}: {_f(v['loss'])}" + (f", {attribution_note(v)}" if attribution_note(v) else "")
                 for a, v in fit["axes"].items()]
        console.print(f"loss by topology axis ({escape(baseline)}, success; nnls over {fit['n_pairs']} pair(s)):")
        console.print("\n".join(lines))
        if fit.get("caveat"):
            console.print(f"  caveat: {escape(fit['caveat'])}")
    print_axis_effects(matrix.get("axis_effects"), console)
    print_descriptor_fit(matrix, console)
