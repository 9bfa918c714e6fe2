"""Training-signal diagnostics of one cell (the seed essay on RL training metrics, and Agent-World's
observation that ~68 % of its tasks score 0 at Pass@10 and so give GRPO no gradient).

With k >= 2 samples per task:

- ``zero_signal_share`` — share of tasks whose k samples all got the same success (all failed
  or all solved): a group-relative RL method (GRPO and kin) gets no advantage, hence no gradient,
  from them. Split into ``all_failed_share`` and ``all_solved_share``.
- ``pass_gap`` — pass@k − pass@1 (unbiased estimators, k = the samples every task has): large
  when the policy can solve a task but not reliably, i.e. where sampling still finds signal.
- ``trajectory_diversity`` — distinct tool-call sequences (names and arguments, in order) among
  a task's samples / its samples, averaged over tasks: 1/k when every sample did the same thing,
  1 when all differ. Exploration that collapses shows here before the reward moves.

On every cell (k = 1 too), per episode: mean ``tool_calls``, ``invalid_calls`` and
``redundant_calls``, and the mean completion tokens of successful and of failed episodes (the
essay's length-versus-correctness check: long failures are flailing, long successes may be
length bias); and the questions put to the simulated user (``questions``) with those it could map
to nothing it knows (``unanswered_questions``): a high share says the simulator, not the model, may
be the cause of low clarification. Episodes that ended in ``error`` (infrastructure, not the model)
are left out.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from topoeval.analysis.stats import is_scored, pass_at_k


class TokensByOutcome(BaseModel):
    """Completion tokens per episode, successes and failures apart."""

    success: float | None = Field(description="Mean completion tokens of successful episodes (None: there were none).")
    failure: float | None = Field(description="Mean completion tokens of failed episodes (None: there were none).")
    n_success: int = Field(description="Successful episodes.")
    n_failure: int = Field(description="Failed episodes.")


class CellDiagnostics(BaseModel):
    """The training-signal diagnostics of one cell (see the module docstring for the formulas)."""

    samples: int = Field(description="k: samples every task of the cell has (the smallest count).")
    zero_signal_share: float | None = Field(
        description="Share of tasks whose k samples all got the same success (no group-relative gradient); "
                    "None when k < 2.")
    all_failed_share: float | None = Field(description="Share of tasks whose k samples all failed; None when k < 2.")
    all_solved_share: float | None = Field(description="Share of tasks whose k samples all succeeded; None when k < 2.")
    pass_gap: float | None = Field(description="pass@k - pass@1 averaged over tasks; None when k < 2.")
    trajectory_diversity: float | None = Field(
        description="Distinct tool-call sequences / samples, averaged over tasks; None when k < 2.")
    tool_calls: float | None = Field(description="Tool calls per episode (skipped calls not counted).")
    invalid_calls: float | None = Field(description="Malformed or schema-invalid tool calls per episode.")
    redundant_calls: float | None = Field(description="Repeated identical read calls per episode (state unchanged).")
    completion_tokens: TokensByOutcome = Field(description="Completion tokens of successes vs failures.")
    questions: float | None = Field(default=None, description="Questions put to the simulated user per episode.")
    unanswered_questions: float | None = Field(
        default=None, description="Questions per episode the simulated user could map to nothing it knows.")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _trajectory(record: dict[str, Any]) -> str:
    """The episode's tool-call sequence as one comparable string."""
    calls = [(c["name"], c.get("arguments") if c.get("arguments") is not None else c.get("raw_arguments"))
             for c in record.get("calls", []) if c.get("status") != "skipped"]
    return json.dumps(calls, sort_keys=True, default=str)


def _solved(record: dict[str, Any]) -> bool:
    return (record["scores"].get("success") or 0.0) >= 1.0


def build_diagnostics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The diagnostics of one cell's episode records (those that ended in ``error`` left out)."""
    scored = [r for r in records if is_scored(r) and r.get("scores")]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        by_task[r["task_id"]].append(r)
    k = min((len(rs) for rs in by_task.values()), default=0)
    grouped: dict[str, float | None] = {"zero_signal_share": None, "all_failed_share": None, "all_solved_share": None,
                                        "pass_gap": None, "trajectory_diversity": None}
    if k >= 2:
        solved = {t: sum(_solved(r) for r in rs) for t, rs in by_task.items()}
        failed = grouped["all_failed_share"] = _mean([float(c == 0) for c in solved.values()])
        all_solved = grouped["all_solved_share"] = _mean([float(c == len(by_task[t])) for t, c in solved.items()])
        grouped["zero_signal_share"] = failed + all_solved if failed is not None and all_solved is not None else None
        grouped["pass_gap"] = _mean([pass_at_k(len(by_task[t]), c, k) - pass_at_k(len(by_task[t]), c, 1)
                                     for t, c in solved.items()])
        grouped["trajectory_diversity"] = _mean([len({_trajectory(r) for r in rs}) / len(rs)
                                                 for rs in by_task.values()])
    wins = [float(r["scores"].get("completion_tokens") or 0) for r in scored if _solved(r)]
    losses = [float(r["scores"].get("completion_tokens") or 0) for r in scored if not _solved(r)]
    return CellDiagnostics(
        samples=k,
        **grouped,
        tool_calls=_mean([float(r["scores"].get("tool_calls", 0)) for r in scored]),
        invalid_calls=_mean([float(r["scores"].get("invalid_calls", 0)) for r in scored]),
        redundant_calls=_mean([float(r["scores"].get("redundant_calls", 0)) for r in scored]),
        completion_tokens=TokensByOutcome(success=_mean(wins), failure=_mean(losses), n_success=len(wins),
                                          n_failure=len(losses)),
        questions=_mean([float(sum(1 for e in r.get("events", []) if e.get("type") == "ask")) for r in scored]),
        unanswered_questions=_mean([float(r["scores"].get("unanswered_questions", 0)) for r in scored]),
    ).model_dump()
