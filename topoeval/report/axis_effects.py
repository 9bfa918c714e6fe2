"""A designed matrix's loss per axis in the reports: report.md's tables (and so report.html's), the terminal's
lines and ``axis_effects.png`` (per-move bars with their 95 % CIs, per model). Built from summary.json's
``matrix.axis_effects`` (:mod:`topoeval.analysis.axis_effects`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.core.files import write_with

#: the metrics report.md gives a table of (summary.json holds every dimension too)
TABLE_METRICS = ("success", "dq")


def _effect(entry: dict[str, Any]) -> str:
    if not entry["estimable"]:
        return "not estimable"
    ci = entry.get("ci95")
    return f"{entry['loss']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _row(values: list[str]) -> str:
    return "| " + " | ".join(values) + " |"


def _rows(design: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, axis, a representative entry) of every row of the design's table, in term order."""
    seen: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for row in design["rows"]:
        for metric in row["metrics"].values():
            for label, e in metric["effects"].items():
                seen.setdefault(label, (label, " + ".join(e["axes"]), e))
    return list(seen.values())


def axis_effects_md(effects: dict[str, Any] | None) -> list[str]:
    """``### Loss per axis (designed matrix around BASE)``: per metric, a row per move (or pair, or group that
    cannot be separated) and a column per model × baseline, loss [95 % CI]; [] without a design."""
    if not effects:
        return []
    out: list[str] = []
    for design in effects["designs"]:
        rows = design["rows"]
        out += [f"### Loss per axis (designed matrix around {design['base']}, plan {design['plan']})", "",
                f"Each move's loss: the score on `{design['base']}` minus the score with that move alone applied, "
                "fitted by least squares over the design's topologies (additive, plus a term per pair of moves "
                "run together: what moving both loses beyond the sum); [paired bootstrap 95 % CI over the "
                f"{effects['bootstrap']['resamples']} resamples of the shared tasks]. Design rank "
                f"{design['rank']} of {design['n_columns']} columns (docs/collapse-report.md).", ""]
        if design.get("caveat"):
            out += [f"Caveat: {design['caveat']}.", ""]
        labels = [f"{r['model']} ({r['baseline']})" for r in rows]
        for metric in TABLE_METRICS:
            fits = [r["metrics"].get(metric) for r in rows]
            if not any(fits):
                continue
            out += [f"#### {metric}", "", _row(["move", "axis", *labels]), _row(["---"] * (2 + len(labels)))]
            out.append(_row(["own score (base)", "—", *[("—" if not f or f["own"] is None else
                                                         f"{f['own']:.2f} (n={f['n_tasks']})") for f in fits]]))
            for label, axis, sample in _rows(design):
                cells = []
                for f in fits:
                    if not f or f["undefined"]:
                        cells.append("—")
                    else:
                        e = f["effects"].get(label)
                        cells.append("—" if e is None else _effect(e))
                note = "" if sample["separable"] else " (not separable in this design)"
                out.append(_row([label + note, axis, *cells]))
            out.append("")
            undefined = [f"- {lab}: {f['undefined']}" for lab, f in zip(labels, fits, strict=True)
                         if f and f["undefined"]]
            if undefined:
                out += ["Undefined (—):", "", *undefined, ""]
    return out


def print_axis_effects(effects: dict[str, Any] | None, console) -> None:
    """The terminal's loss per axis (success) of a designed matrix, one line per model and design."""
    if not effects:
        return
    from rich.markup import escape

    for design in effects["designs"]:
        console.print(f"loss per axis around {escape(design['base'])} (success, loss [95 % CI]; rank "
                      f"{design['rank']} of {design['n_columns']}):")
        for row in design["rows"]:
            fit = row["metrics"].get("success")
            if not fit:
                continue
            if fit["undefined"]:
                console.print(f"  {escape(row['model'])}: — {escape(fit['undefined'])}")
                continue
            parts = [f"{label}{'' if e['separable'] else ' (not separable)'} {_effect(e)}"
                     for label, e in fit["effects"].items()]
            console.print(f"  {escape(row['model'])}: " + escape("; ".join(parts)))
        if design.get("caveat"):
            console.print(f"  caveat: {escape(design['caveat'])}")


def plot_axis_effects(summary: dict[str, Any], path: Path) -> Path | None:
    """``axis_effects.png``: per design, the success lost to each move, a bar per model with its 95 % CI as an
    error bar (a row whose own score ties with 0 has no bars: its effects are undefined); None without a
    design."""
    effects = (summary.get("matrix") or {}).get("axis_effects")
    if not effects or not effects["designs"]:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    designs = effects["designs"]
    heights = [max(2.0, 0.32 * len(_rows(d)) * max(1, len(d["rows"])) ** 0.5 + 1.2) for d in designs]
    fig, axes = plt.subplots(len(designs), 1, figsize=(8.5, sum(heights)), dpi=110, squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, design in zip(axes[:, 0], designs, strict=True):
        labels = [label for label, _, _ in _rows(design)]
        rows = [r for r in design["rows"] if (r["metrics"].get("success") or {}).get("effects")]
        width = 0.8 / max(1, len(rows))
        for i, row in enumerate(rows):
            fit = row["metrics"]["success"]
            ys, xs, lo, hi = [], [], [], []
            for j, label in enumerate(labels):
                e = fit["effects"].get(label)
                if not e or e["loss"] is None:
                    continue
                ci = e.get("ci95") or [e["loss"], e["loss"]]
                ys.append(j + (i - (len(rows) - 1) / 2) * width)
                xs.append(e["loss"])
                lo.append(e["loss"] - ci[0])
                hi.append(ci[1] - e["loss"])
            ax.barh(ys, xs, height=width, xerr=[lo, hi], capsize=2, label=f"{row['model']} · {row['baseline']}")
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("success lost to the move (own − moved), 95 % CI", fontsize=8)
        ax.set_title(f"loss per axis around {design['base']} (rank {design['rank']} of {design['n_columns']})",
                     fontsize=9)
        if rows:
            ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    write_with(path, fig.savefig)
    plt.close(fig)
    return path


#: report.md's column heads of the measured descriptors
DESCRIPTOR_HEADS = {"tools_offered": "tools", "gold_calls_mean": "gold calls", "gold_calls_std": "± (std)",
                    "serial_share": "serial share", "irreversible_per_task": "irreversible / task",
                    "prompt_tokens": "prompt tokens (chars/4)",
                    "observation_chars_per_turn": "observation chars / turn"}


def _num(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2f}"


def descriptors_md(matrix: dict[str, Any]) -> list[str]:
    """``### Measured descriptors`` (each topology, from its tasks) and ``### What the descriptors explain``
    (the fit of off-diagonal loss on their changes); [] when the run measured none."""
    descriptors = matrix.get("descriptors")
    if not descriptors:
        return []
    out = ["### Measured descriptors", "",
           "Each topology measured from its first test tasks (docs/transfer-matrix.md): tools offered, the gold "
           "plan's length and spread, the share of calls that must wait for an earlier one, irreversible calls per "
           "task, the opening prompt in characters / 4, and tool-result characters per turn when the oracle plays.",
           "", _row(["topology", *DESCRIPTOR_HEADS.values()]), _row(["---"] * (1 + len(DESCRIPTOR_HEADS)))]
    for topology, d in descriptors.items():
        out.append(_row([topology, *[_num(d.get(k)) for k in DESCRIPTOR_HEADS]]))
    out.append("")
    fit = matrix.get("descriptor_fit")
    if not fit:
        return out
    out += ["### What the descriptors explain", ""]
    if fit.get("why") and not fit["per_descriptor"]:
        return [*out, f"Not fitted: {fit['why']}.", ""]
    joint = fit.get("joint")
    out += [f"Off-diagonal success loss over {fit['n_pairs']} pair(s) (own score clear of 0) against each "
            "descriptor's change from the own topology: the slope and the share of variance it explains alone (r²)"
            + (f"; all together r² {joint['r2']:.2f}, leave-one-out r² {joint['loo_r2']:.2f} (what the fit "
               "predicts of a pair it did not see)" if joint and joint.get("r2") is not None
               and joint.get("loo_r2") is not None else "") + ".", "",
            _row(["descriptor", "slope", "r²", "note"]), _row(["---"] * 4)]
    for name, d in fit["per_descriptor"].items():
        out.append(_row([name, _num(d.get("slope")), _num(d.get("r2")), d.get("why", "")]))
    return [*out, "", f"Caveat: {fit['caveat']}.", ""]


def print_descriptor_fit(matrix: dict[str, Any], console) -> None:
    """One terminal line: how much the measured descriptors explain of the off-diagonal loss."""
    fit = matrix.get("descriptor_fit") or {}
    joint = fit.get("joint")
    if not joint or joint.get("r2") is None or joint.get("loo_r2") is None:
        return
    best = max(((n, d["r2"]) for n, d in fit["per_descriptor"].items() if d.get("r2") is not None),
               key=lambda p: p[1], default=None)
    console.print(f"measured descriptors explain r² {joint['r2']:.2f} of the off-diagonal success loss over "
                  f"{fit['n_pairs']} pairs (leave-one-out {joint['loo_r2']:.2f})"
                  + (f"; alone, {best[0]} explains most: r² {best[1]:.2f}" if best else "")
                  + " — this run's models only (135M adapters need not speak for larger models)")
