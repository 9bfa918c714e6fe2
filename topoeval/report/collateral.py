"""Collateral damage in the reports (report.md, report.html, the transfer matrix's section): per cell the share
of episodes that changed an entity outside the task's scope, with its 95 % CI, beside success and never in it.

Shown only when some cell of the run defines it (a suite that gives its tasks a collateral scope); a cell whose
suite defines none reads ``— (no scope)``, never 0, with the reason summary.json's cell ``nulls`` gives.
docs/metrics.md ("Collateral damage") defines it.
"""

from __future__ import annotations

from typing import Any

from topoeval.report.tables import mean_ci

#: The collateral rows of the decision-quality table, beside success.
COLLATERAL_ROWS = ("collateral", "collateral_irreversible")
#: What a cell without a collateral reading shows.
NOT_MEASURED = "— (no scope)"
#: The paragraph under a collateral table.
EXPLAINED = ("Collateral: share of episodes that changed at least one entity outside the task's scope "
             "(docs/metrics.md, \"Collateral damage\"), mean [bootstrap 95 % CI over tasks]; irreversible: share "
             "where an irreversible call wrote such an entity; n: episodes where it is defined. Reported beside "
             "success, never folded into it: success stays the benchmark's own verdict.")


def _stat(cell: dict[str, Any] | None, metric: str) -> dict[str, Any] | None:
    stat = ((cell or {}).get("metrics") or {}).get(metric)
    return stat if isinstance(stat, dict) and stat.get("mean") is not None else None


def collateral_defined(cells: list[dict[str, Any]]) -> bool:
    """Whether any cell of the run has a collateral reading."""
    return any(_stat(c, "collateral") for c in cells)


def collateral_text(cell: dict[str, Any] | None) -> str:
    """A cell's ``rate [CI]; irreversible rate [CI]; n=episodes``, or :data:`NOT_MEASURED` (``—`` without a cell)."""
    if cell is None:
        return "—"
    rate = _stat(cell, "collateral")
    if rate is None:
        return NOT_MEASURED
    n = cell.get("collateral_episodes")
    text = mean_ci(rate)
    irreversible = _stat(cell, "collateral_irreversible")
    if irreversible is not None:
        text += f"; irreversible {mean_ci(irreversible)}"
    return text + (f"; n={n}" if n else f"; n={rate.get('n', 0)} tasks")


def _reasons(cells: list[dict[str, Any]]) -> list[str]:
    """The reasons (cells' ``nulls``) of the :data:`NOT_MEASURED` cells, each once."""
    why = dict.fromkeys((c.get("nulls") or {}).get("metrics.collateral") for c in cells if not _stat(c, "collateral"))
    return [f"{NOT_MEASURED}: {w}." for w in why if w]


def collateral_md(by_key: dict[tuple[str, str], dict[str, dict[str, Any]]], topos: list[tuple[str, str]]) -> list[str]:
    """report.md's ``## Collateral damage, beside success``: model × baseline rows, topology columns; [] when no
    cell defines it."""
    cells = [c for per in by_key.values() for c in per.values()]
    if not collateral_defined(cells):
        return []
    out = ["", "## Collateral damage, beside success", "", EXPLAINED, "",
           _row(["model", "baseline", *(f"{t} ({r})" for t, r in topos)]), _row(["---"] * (2 + len(topos)))]
    for (model, baseline), per in by_key.items():
        out.append(_row([model, baseline, *(collateral_text(per.get(t)) for t, _ in topos)]))
    reasons = _reasons(cells)
    return out + (["", *reasons] if reasons else [])


def matrix_collateral_md(matrix: dict[str, Any], cells: list[dict[str, Any]]) -> list[str]:
    """The transfer matrix's ``### collateral (beside success)`` table: each matrix row's collateral on every
    topology; [] when no cell defines it."""
    if not collateral_defined(cells):
        return []
    by_cell = {(c["model"], c["baseline"], c["topology"]): c for c in cells}
    topos = matrix["topologies"]
    out = ["### collateral (beside success)", "", EXPLAINED, "", _row(["model", "baseline", "trained on", *topos]),
           _row(["---"] * (3 + len(topos)))]
    for r in matrix["rows"]:
        vals = [collateral_text(by_cell.get((r["model"], r["baseline"], t)))
                + (" *" if t == r["train_topology"] else "") for t in topos]
        out.append(_row([r["model"], r["baseline"], r["train_topology"] or "—", *vals]))
    reasons = _reasons([by_cell[k] for k in by_cell if k[2] in topos])
    return out + ([""] + reasons if reasons else []) + [""]


def _row(values: list[str]) -> str:
    return "| " + " | ".join(values) + " |"
