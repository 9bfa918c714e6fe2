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
from array import array
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from topoeval.analysis.stats import Fold, is_scored, pass_at_k


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


def _trajectory(record: dict[str, Any]) -> str:
    """The episode's tool-call sequence as one comparable string."""
    calls = [(c["name"], c.get("arguments") if c.get("arguments") is not None else c.get("raw_arguments"))
             for c in record.get("calls", []) if c.get("status") != "skipped"]
    return json.dumps(calls, sort_keys=True, default=str)


def _solved(record: dict[str, Any]) -> bool:
    return (record["scores"].get("success") or 0.0) >= 1.0


class DiagnosticsFold:
    """The diagnostics of one cell, folded record by record with each task's records together (plan
    order); it keeps per finished task three counts (samples, solved, distinct trajectories), and the
    trajectories of the task in progress only."""

    def __init__(self) -> None:
        self.counts, self.solved, self.distinct = array("q"), array("q"), array("q")
        self.per_episode = {name: Fold() for name in ("tool_calls", "invalid_calls", "redundant_calls", "questions",
                                                       "unanswered_questions")}
        self.wins, self.losses = Fold(), Fold()
        self._task: str | None = None
        self._n = self._solved = 0
        self._trajectories: set[str] = set()

    def add(self, r: dict[str, Any]) -> None:
        """One episode record (those that ended in ``error`` or have no scores are left out)."""
        if not (is_scored(r) and r.get("scores")):
            return
        if r["task_id"] != self._task:
            self.close_task()
            self._task = r["task_id"]
        scores, solved = r["scores"], _solved(r)
        self._n += 1
        self._solved += solved
        self._trajectories.add(_trajectory(r))
        (self.wins if solved else self.losses).add(float(scores.get("completion_tokens") or 0))
        for name in ("tool_calls", "invalid_calls", "redundant_calls", "unanswered_questions"):
            self.per_episode[name].add(float(scores.get(name, 0)))
        self.per_episode["questions"].add(float(sum(1 for e in r.get("events", []) if e.get("type") == "ask")))

    def close_task(self) -> None:
        if self._task is not None and self._n:
            self.counts.append(self._n)
            self.solved.append(self._solved)
            self.distinct.append(len(self._trajectories))
        self._task, self._n, self._solved, self._trajectories = None, 0, 0, set()

    def result(self) -> dict[str, Any]:
        self.close_task()
        k = min(self.counts, default=0)
        grouped: dict[str, float | None] = {"zero_signal_share": None, "all_failed_share": None,
                                            "all_solved_share": None, "pass_gap": None, "trajectory_diversity": None}
        if k >= 2:
            tasks = list(zip(self.counts, self.solved, self.distinct, strict=True))
            failed = grouped["all_failed_share"] = _mean([float(c == 0) for _, c, _ in tasks])
            all_solved = grouped["all_solved_share"] = _mean([float(c == n) for n, c, _ in tasks])
            grouped["zero_signal_share"] = (failed + all_solved if failed is not None and all_solved is not None
                                            else None)
            grouped["pass_gap"] = _mean([pass_at_k(n, c, k) - pass_at_k(n, c, 1) for n, c, _ in tasks])
            grouped["trajectory_diversity"] = _mean([d / n for n, _, d in tasks])
        means = {name: fold.mean() for name, fold in self.per_episode.items()}
        return CellDiagnostics(
            samples=k,
            **grouped,
            **means,
            completion_tokens=TokensByOutcome(success=self.wins.mean(), failure=self.losses.mean(),
                                              n_success=self.wins.n, n_failure=self.losses.n),
        ).model_dump()


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def build_diagnostics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The diagnostics of one cell's episode records (those that ended in ``error`` left out), in any order."""
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[r["task_id"]].append(r)
    fold = DiagnosticsFold()
    for rs in by_task.values():
        for r in rs:
            fold.add(r)
    return fold.result()
