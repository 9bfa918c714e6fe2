"""What flipped between two models on one cell, as the viewer's "what flipped" page reads it.

From a run's episode index (:class:`topoeval.view.index.EpisodeIndex`), for one cell (model ·
baseline · topology) and every other model of the same baseline and topology: the tasks that went
0 → 1 on success from the first model to the other and those that went 1 → 0, the counts of each
class, McNemar's exact p and the paired verdict — all from :mod:`topoeval.analysis.paired`, never
worked out again in the page. Each flipped task names the two episodes to open side by side: the
first sample where the two models' outcomes differ in the flip's direction (a run of k samples
flips on the per-task pass rate).

A sweep's checkpoints are models of one run folder, so two checkpoints compare here as two models do.
"""

from __future__ import annotations

from typing import Any

from topoeval.analysis.paired import RULE, compare_flips
from topoeval.view.index import STATUSES, EpisodeIndex

#: a row's status code for an episode that ended in error (not scored, as in every cell statistic)
_ERROR = STATUSES.index("error")


#: task -> sample -> (success 1/0, episode number) of one cell
Outcomes = dict[int, dict[int | str, tuple[int, int]]]


def _outcomes(index: EpisodeIndex, cells: list[int]) -> dict[int, Outcomes]:
    """Per cell of ``cells``: task -> sample -> (success 1/0, episode number) of its scored episodes (an
    error or an episode without a success score does not count, as in the cell's statistics). One pass
    over the run's index."""
    out: dict[int, Outcomes] = {c: {} for c in cells}
    for n, (c, task, sample, status, success, *_rest) in enumerate(index.rows):
        by_task = out.get(c)
        if by_task is not None and status != _ERROR and status != "error" and success is not None:
            by_task.setdefault(task, {})[sample] = (success, n)
    return out


def _rates(outcomes: Outcomes, tasks: list[str]) -> dict[str, float]:
    return {tasks[t]: sum(s for s, _ in by.values()) / len(by) for t, by in outcomes.items()}


def _order(sample: int | str) -> tuple[int, int, str]:
    """Samples in their order: numbers first, numerically (a foreign key's text sample after them)."""
    return (0, sample, "") if isinstance(sample, int) else (1, 0, sample)


def _pair(a: dict[int | str, tuple[int, int]], b: dict[int | str, tuple[int, int]], want: tuple[int, int]) -> list[int]:
    """The two episode numbers to open for a flipped task: the first sample both ran where A scored
    ``want[0]`` and B ``want[1]``; else A's first sample scoring ``want[0]`` and B's first scoring
    ``want[1]``; else the first sample of each."""
    for s in sorted(set(a) & set(b), key=_order):
        if (a[s][0], b[s][0]) == want:
            return [a[s][1], b[s][1]]

    def first(side: dict[int | str, tuple[int, int]], value: int) -> int:
        ordered = sorted(side, key=_order)
        return next((side[s][1] for s in ordered if side[s][0] == value), side[ordered[0]][1])

    return [first(a, want[0]), first(b, want[1])]


def comparable(index: EpisodeIndex, cell: int) -> list[int]:
    """The cells of the same baseline and topology as ``cell`` with another model, in the run's order."""
    model, baseline, topology = index.cells[cell]
    return [c for c, (m, b, t) in enumerate(index.cells) if (b, t) == (baseline, topology) and m != model]


def flips_payload(index: EpisodeIndex, cell: int) -> dict[str, Any]:
    """The "what flipped" page of one cell: per other model of its baseline and topology (``against``),
    the flipped tasks by direction, each ``[task, episode of A, episode of B]`` (task as an index into
    the run's task list), the counts of the other classes, McNemar's exact p and the verdict (in words,
    ``verdict_text``, with the rule)."""
    if not 0 <= cell < len(index.cells):
        raise IndexError(cell)
    tasks, others = index.tasks, comparable(index, cell)
    outcomes = _outcomes(index, [cell, *others])
    a_out, model_a = outcomes[cell], index.cells[cell][0]
    number = {t: k for k, t in enumerate(tasks)}
    against = []
    for other in others:
        b_out, model_b = outcomes[other], index.cells[other][0]
        test = compare_flips(_rates(a_out, tasks), _rates(b_out, tasks))
        flips, p, verdict = test.flips, test.p, test.verdict
        rows = {direction: [[number[t], *_pair(a_out[number[t]], b_out[number[t]], want)]
                            for t in sorted(getattr(flips, direction), key=number.__getitem__)]
                for direction, want in (("up", (0, 1)), ("down", (1, 0)))}
        against.append({
            "cell": other, "model": model_b, **rows,
            "both": len(flips.both), "neither": len(flips.neither), "tied": len(flips.tied),
            "only_a": len(flips.only_a), "only_b": len(flips.only_b),
            "p": p, "verdict": verdict,
            "verdict_text": {"b_better": f"{model_b} better", "a_better": f"{model_a} better",
                             "tie": "tie"}[verdict],
            "rule": RULE.replace("B better", f"{model_b} better").replace("A better", f"{model_a} better"),
        })
    return {"cell": cell, "against": against}
