"""PNG plots of a run (matplotlib, headless): a transfer matrix's heatmap (``matrix.png``), the ladder
curves with CI bands, few-shot recovery, and per-dimension ID vs OOD."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from topoeval.analysis.collapse import QUALITY
from topoeval.core.files import write_with


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _shots(baseline: str) -> int:
    m = re.match(r"(\d+)-shot", baseline)
    return int(m.group(1)) if m else 0


def plot_fewshot(summary: dict[str, Any], path: Path) -> Path | None:
    """Success against shots k: one line per model x OOD topology, with the model's S_id dashed."""
    collapse = summary.get("collapse") or []
    if len({e["baseline"] for e in collapse}) < 2:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=110)
    for model in dict.fromkeys(e["model"] for e in collapse):
        entries = sorted((e for e in collapse if e["model"] == model), key=lambda e: _shots(e["baseline"]))
        ks = [_shots(e["baseline"]) for e in entries]
        for topo in entries[0]["S_ood"]:
            ax.plot(ks, [e["S_ood"].get(topo) or 0.0 for e in entries], marker="o", label=f"{model} · {topo}")
        ax.plot(ks, [e["S_id"] or 0.0 for e in entries], linestyle="--", alpha=0.6, label=f"{model} · ID")
    ax.set_xlabel("demonstrations (k)")
    ax.set_ylabel("success")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("few-shot recovery")
    ax.legend(fontsize=7)
    fig.tight_layout()
    write_with(path, fig.savefig)
    plt.close(fig)
    return path


#: Panels per row of the per-dimension plot: more models wrap onto further rows, so the figure
#: keeps a page's width (report.html scales it to the page) and each panel stays readable.
PANELS_PER_ROW = 3


def plot_dimensions(summary: dict[str, Any], path: Path) -> Path | None:
    """Zero-shot ID vs OOD bars of dq and each dimension, one panel per model (3 per row)."""
    cells = [c for c in summary["cells"] if c["baseline"] == "0-shot"] or summary["cells"]
    if not any(c.get("role") in ("id", "ood") for c in cells):  # a matrix: no ID/OOD bars to draw, no empty chart
        return None
    models = list(dict.fromkeys(c["model"] for c in cells))
    if not models:
        return None
    plt = _pyplot()
    ncols = min(PANELS_PER_ROW, len(models))
    nrows = -(-len(models) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.0 * ncols, 3.4 * nrows), dpi=110, squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(models):]:
        ax.set_visible(False)
    for ax, model in zip(flat, models, strict=False):  # more axes than models: the rest hidden
        mine = [c for c in cells if c["model"] == model]
        for offset, role in ((-0.2, "id"), (0.2, "ood")):
            values = []
            for dim in QUALITY:
                stats = [c["metrics"].get(dim, {}).get("mean") for c in mine if c["role"] == role]
                stats = [s for s in stats if s is not None]
                values.append(sum(stats) / len(stats) if stats else 0.0)
            ax.bar([i + offset for i in range(len(QUALITY))], values, width=0.4, label=role.upper())
        ax.set_xticks(range(len(QUALITY)), QUALITY, rotation=30, fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_title(model, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    write_with(path, fig.savefig)
    plt.close(fig)
    return path


LADDER_METRICS = ("success", "dq")


def plot_ladder(summary: dict[str, Any], path: Path) -> Path | None:
    """Score per ladder step, one panel per metric (success, dq), one line per model x baseline,
    with its bootstrap 95 % CI as a band; each line's legend entry names its shape."""
    ladder = summary.get("ladder") or []
    if not ladder:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(LADDER_METRICS), figsize=(6.2 * len(LADDER_METRICS), 4.0), dpi=110, squeeze=False)
    for ax, metric in zip(axes[0], LADDER_METRICS, strict=True):
        labels: list[str] = []
        for entry in ladder:
            m = entry["metrics"].get(metric)
            if not m:
                continue
            curve = m["curve"]
            labels = [p["topology"] if not p["axis"] else f"{p['topology']}\n({p['axis']})" for p in curve]
            xs = [i for i, p in enumerate(curve) if p["mean"] is not None]
            ys = [curve[i]["mean"] for i in xs]
            line, = ax.plot(xs, ys, marker="o", label=f"{entry['model']} · {entry['baseline']}: {m['shape']}")
            band = [(i, curve[i]["ci95"]) for i in xs if curve[i].get("ci95")]
            if band:
                ax.fill_between([i for i, _ in band], [ci[0] for _, ci in band], [ci[1] for _, ci in band],
                                color=line.get_color(), alpha=0.15, linewidth=0)
        ax.set_xticks(range(len(labels)), labels, fontsize=7)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel(metric)
        ax.set_title(f"ladder: {metric} per step", fontsize=9)
        ax.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    write_with(path, fig.savefig)
    plt.close(fig)
    return path


def write_plots(summary: dict[str, Any], run_dir: Path) -> list[Path]:
    from topoeval.report.axis_effects import plot_axis_effects
    from topoeval.report.matrix import plot_matrix

    out = [plot_matrix(summary, run_dir / "matrix.png"), plot_axis_effects(summary, run_dir / "axis_effects.png"),
           plot_ladder(summary, run_dir / "plot_ladder.png"), plot_fewshot(summary, run_dir / "plot_fewshot.png"),
           plot_dimensions(summary, run_dir / "plot_dimensions.png")]
    return [p for p in out if p is not None]
