"""Terminal tables of a paired comparison (``topoeval compare``): per cell the flips with their task ids, McNemar's
p, the paired CIs of success and dq, and the verdict."""

from __future__ import annotations

from typing import Any

from topoeval.analysis.paired import PairedComparison, PairedDiff

#: flipped task ids shown per cell and direction before ``+N more``
SHOWN_IDS = 6


def task_list(ids: list[str], shown: int = SHOWN_IDS) -> str:
    """``t1, t2, t3 +4 more`` (``—`` for none)."""
    if not ids:
        return "—"
    text = ", ".join(ids[:shown])
    return text + (f" +{len(ids) - shown} more" if len(ids) > shown else "")


def fmt_diff(diff: PairedDiff) -> str:
    """``+0.25 [0.08, 0.42]`` (``—`` with no pair)."""
    if diff.diff is None:
        return "—"
    text = f"{diff.diff:+.2f}"
    if diff.ci95:
        text += f" [{diff.ci95[0]:+.2f}, {diff.ci95[1]:+.2f}]"
    return text


def verdict_word(verdict: str, a: str, b: str) -> str:
    """``b better``, ``a better`` or ``tie``."""
    return {"b_better": f"{b} better", "a_better": f"{a} better"}.get(verdict, "tie")


def print_paired(comparison: PairedComparison, console: Any, rule: str | None = None) -> None:
    """One table: a row per cell (topology, baseline) of B against A."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(f"paired: {comparison.b} against {comparison.a} (flips read from A to B)"))
    for name, justify in (("topology", "left"), ("baseline", "left"), ("pairs", "right"), ("up 0→1", "left"),
                          ("down 1→0", "left"), ("McNemar p", "right"), ("Δ success [95% CI]", "right"),
                          ("Δ dq [95% CI]", "right"), ("verdict", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for c in comparison.cells:
        table.add_row(escape(c.topology), escape(c.baseline), str(c.n_pairs),
                      escape(f"{c.n_up}: {task_list(c.flips.up)}" if c.n_up else "0"),
                      escape(f"{c.n_down}: {task_list(c.flips.down)}" if c.n_down else "0"),
                      f"{c.mcnemar_p:.3g}", fmt_diff(c.success), fmt_diff(c.quality["dq"]),
                      escape(verdict_word(c.verdict, comparison.a, comparison.b)))
    console.print(table)
    for c in comparison.cells:
        missing = len(c.flips.only_a) + len(c.flips.only_b)
        if missing:
            console.print(escape(f"note: {c.topology}/{c.baseline}: {missing} task(s) scored on one side only "
                                 f"({len(c.flips.only_a)} only in A, {len(c.flips.only_b)} only in B), not paired"))
    for side, cells in (("A", comparison.only_a), ("B", comparison.only_b)):
        if cells:
            console.print(escape(f"note: cells only {side} has, not paired: "
                                 + ", ".join(f"{t}/{b}" for b, t in cells)))
    if rule:
        console.print(escape(f"verdict rule: {rule}"))
