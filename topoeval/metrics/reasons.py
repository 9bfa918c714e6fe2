"""Why each decision-quality dimension scored what it did, in one line each: which hidden slot was
never asked, which priority the committed option broke, what made a commit unsafe, how many turns
the plan needed against those used, how many calls advanced it.

The reasons go into an episode's scores as ``scores["reasons"]`` (dimension -> text, only for the
dimensions that apply); a reader of older episode records finds no such key. They never change a
score: they restate what :mod:`topoeval.metrics.dimensions` computed.
"""

from __future__ import annotations

from typing import Any

from topoeval.core.suite import Task, ToolSpec
from topoeval.metrics.dimensions import commit_faults, irreversible_commits
from topoeval.metrics.progress import Progress


def _slots(events: list[dict[str, Any]]) -> set[str]:
    return {s for e in events if e["type"] == "ask" for s in e["slots"]}


def clarification_reason(task: Task, events: list[dict[str, Any]], over: int) -> str:
    hidden, asked = set(task.hidden_slots), _slots(events)
    missed = sorted(hidden - asked)
    parts = [f"never asked: {', '.join(missed)}" if missed
             else f"asked every hidden slot ({', '.join(sorted(hidden))})"]
    if over:
        parts.append(f"{over} over-asked question(s)")
    return "; ".join(parts)


def priority_reason(task: Task, events: list[dict[str, Any]]) -> str:
    committed = [e["object"] for e in events if e["type"] == "commit" and e["object"] in task.options][-1]
    met = task.options[committed]
    if not task.priority:
        most = max(sum(v.values()) for v in task.options.values())
        return f"committed {committed}: {sum(met.values())} of the {most} wishes the best option meets"
    order = " > ".join(task.priority)
    best = max(task.options, key=lambda o: tuple(task.options[o].get(c, False) for c in task.priority))
    broken = next((c for c in task.priority if met.get(c, False) != task.options[best].get(c, False)), None)
    if broken is None:
        return f"committed {committed}, optimal under {order}"
    return f"committed {committed}; broke '{broken}' under {order} (the optimum, e.g. {best}, keeps it)"


def risk_reason(task: Task, events: list[dict[str, Any]], tools: dict[str, ToolSpec]) -> str:
    out = []
    for c in irreversible_commits(events):
        faults = commit_faults(task, c, events, tools)
        where = f"{c['tool']} {c['object']} (turn {c.get('turn', '?')})"
        out.append(f"{where}: unsafe — {'; '.join(faults)}" if faults else f"{where}: safe")
    return " | ".join(out)


def efficiency_reason(done: Progress, redundant: int) -> str:
    text = (f"{len(done.matched)} of {len(done.expected)} plan calls reached; {len(done.matched)} of "
            f"{len(done.counted)} calls made advanced the plan")
    return text + (f"; {redundant} redundant" if redundant else "")


def parallelism_reason(done: Progress, calls: list[dict[str, Any]], score: float, violations: int) -> str:
    turns = len({calls[i]["turn"] for i in done.counted})
    text = f"{len(done.matched)} of {len(done.expected)} plan calls in {turns} tool-calling turn(s); score {score:.2f}"
    return text + (f"; {violations} call(s) used a result not yet seen" if violations else "")


def reasons(task: Task, calls: list[dict[str, Any]], events: list[dict[str, Any]], tools: dict[str, ToolSpec],
            dims: dict[str, Any], counts: dict[str, int], done: Progress) -> dict[str, str]:
    """dimension -> one line, for each dimension that applies (its score is not None)."""
    out: dict[str, str] = {}
    if dims.get("clarification") is not None:
        out["clarification"] = clarification_reason(task, events, counts["over_asks"])
    if dims.get("priority") is not None:
        out["priority"] = priority_reason(task, events)
    if dims.get("risk") is not None:
        out["risk"] = risk_reason(task, events, tools)
    if dims.get("parallelism") is not None:
        out["parallelism"] = parallelism_reason(done, calls, dims["parallelism"], counts["serial_violations"])
    if dims.get("efficiency") is not None:
        out["efficiency"] = efficiency_reason(done, counts["redundant_calls"])
    return out
