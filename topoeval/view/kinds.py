"""What a run's first screen leads with, by the kind of run: a transfer matrix's table (each model on each
topology, its own topology marked, and its transfer), a sweep's points and curves (the sweep folder that
holds the run), and which of a run's pictures hold no data (the ID/OOD dimension bars of a run whose
topologies have no id/ood role).

Everything is built from what summary.json recorded, as HTML text with every value escaped
(:func:`html.escape`): the page sets it as markup, so nothing of a foreign summary may become an element.
"""

from __future__ import annotations

import html
from typing import Any

#: the schema of a sweep folder's summary.json (``topoeval sweep ... --out DIR``)
SWEEP_SCHEMA = "topoeval.sweep/1"
#: pictures that hold no data when no cell of the run has an id or ood role
ROLE_PICTURES = ("plot_dimensions.png",)


def _e(value: Any) -> str:
    return html.escape(str(value))


def _mean(point: Any) -> float | None:
    value = point.get("mean") if isinstance(point, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _point(point: Any) -> str:
    """``1.00 [1.00, 1.00] n=2`` of a summary statistic, or ``—`` where it has no mean."""
    mean = _mean(point)
    if mean is None:
        return "—"
    ci, n = point.get("ci95"), point.get("n")
    interval = (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if isinstance(ci, list) and len(ci) == 2
                and all(isinstance(v, (int, float)) for v in ci) else "")
    return f"{mean:.2f}{interval}" + (f" n={n}" if isinstance(n, int) else "")


def is_matrix(summary: dict[str, Any]) -> bool:
    """Whether summary.json holds a transfer matrix with rows to show."""
    matrix = summary.get("matrix")
    return isinstance(matrix, dict) and isinstance(matrix.get("rows"), list) and bool(matrix["rows"])


def empty_pictures(summary: dict[str, Any]) -> set[str]:
    """The pictures of a run that hold no data: the ID/OOD bars when no cell has an id or ood role
    (a transfer matrix's topologies have none)."""
    cells = summary.get("cells")
    if not isinstance(cells, list) or not cells:
        return set()
    has_role = any(isinstance(c, dict) and c.get("role") in ("id", "ood") for c in cells)
    return set() if has_role else set(ROLE_PICTURES)


def matrix_headline(summary: dict[str, Any]) -> str:
    """The headline of a transfer-matrix run: per model and baseline, the topology it was trained on, its
    success there (own) and the mean over the other topologies (transfer), then its success on each
    topology with the 95 % CI and n, the own topology's cell outlined; "" when there is no matrix."""
    if not is_matrix(summary):
        return ""
    matrix = summary["matrix"]
    topologies = [t for t in matrix.get("topologies") or [] if isinstance(t, str)]
    out = ['<section id="headline" class="matrix"><h2>Transfer matrix</h2>',
           "<p>Success of each model on each topology, mean [95 % CI] and n; the model's own (trained) topology "
           "is outlined. <b>own</b>: success on it; <b>transfer</b>: the mean over the other topologies (over all "
           "of them for a model trained on none).</p>",
           '<div class="scroll"><table><tr><th>model</th><th>baseline</th><th>trained on</th><th>own</th>'
           "<th>transfer</th>" + "".join(f"<th>{_e(t)}</th>" for t in topologies) + "</tr>"]
    for row in matrix["rows"]:
        if not isinstance(row, dict):
            continue
        cells: dict[str, Any] = row["cells"] if isinstance(row.get("cells"), dict) else {}
        train = row.get("train_topology") if isinstance(row.get("train_topology"), str) else None
        success = {t: (cells.get(t) or {}).get("success") if isinstance(cells.get(t), dict) else None
                   for t in topologies}
        others = [m for t in topologies if t != train and (m := _mean(success[t])) is not None]
        own = _point(success.get(train)) if train else "—"
        transfer = f"{sum(others) / len(others):.2f}" if others else "—"
        nulls: dict[str, Any] = row["nulls"] if isinstance(row.get("nulls"), dict) else {}
        trained = (_e(train) if train else
                   '<span class="muted small">none' + (f": {_e(nulls['train_topology'])}"
                                                        if nulls.get("train_topology") else "") + "</span>")
        out.append(f"<tr><td>{_e(row.get('model', '?'))}</td><td>{_e(row.get('baseline', '?'))}</td>"
                   f"<td>{trained}</td><td class=\"num\">{_e(own)}</td><td class=\"num\">{_e(transfer)}</td>"
                   + "".join(f'<td class="num{" own" if t == train else ""}">{_e(_point(success[t]))}'
                             + (' <span class="pill">own</span>' if t == train else "") + "</td>"
                             for t in topologies) + "</tr>")
    out.append("</table></div></section>")
    return "\n".join(out)


def is_sweep(summary: dict[str, Any]) -> bool:
    """Whether a summary.json is a sweep folder's."""
    return summary.get("schema") == SWEEP_SCHEMA


def sweep_headline(sweep: dict[str, Any]) -> str:
    """A sweep folder's points: per step, the model and its success on each topology of the curves (mean
    [95 % CI] n), then the sentences naming each curve's shape and any no-tool-call notice."""
    points = [p for p in sweep.get("points") or [] if isinstance(p, dict)]
    curves = [c for c in sweep.get("curves") or [] if isinstance(c, dict)]
    out = ['<section id="sweep"><h2>Sweep</h2>',
           f"<p>{_e(sweep.get('protocol') or '?')}, baseline {_e(sweep.get('baseline') or '?')}: success at each "
           "point of the sweep (mean [95 % CI] n). This run folder is the sweep's run.</p>",
           '<div class="scroll"><table><tr><th>step</th><th>model</th>'
           + "".join(f"<th>{_e(c.get('topology'))} ({_e(c.get('role'))})</th>" for c in curves) + "</tr>"]
    for p in points:
        cols = []
        for c in curves:
            at = [s for s in c.get("success") or [] if isinstance(s, dict) and s.get("step") == p.get("step")]
            cols.append(f'<td class="num">{_e(_point(at[0]) if at else "—")}</td>')
        out.append(f"<tr><td class=\"num\">{_e(p.get('step'))}</td><td>{_e(p.get('model'))}</td>{''.join(cols)}</tr>")
    out.append("</table></div>")
    sentences = [s["sentence"] for s in sweep.get("shapes") or []
                 if isinstance(s, dict) and isinstance(s.get("sentence"), str) and s.get("metric") == "success"]
    if sentences:
        out.append("<ul>" + "".join(f"<li>{_e(s)}</li>" for s in sentences) + "</ul>")
    if isinstance(sweep.get("no_tool_calls"), str):
        out.append(f'<p class="why notice">{_e(sweep["no_tool_calls"])}</p>')
    out.append("</section>")
    return "\n".join(out)
