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

A model that never calls a tool (``no_tool_call_share``, :func:`never_calls_tools`): a cell where at least
:data:`NO_TOOL_CALL_SHARE` of at least :data:`NO_TOOL_CALL_MIN_EPISODES` scored episodes made no valid tool
call is flagged (``never_calls_tools`` in the cell of summary.json). Its scores measure the call format, the
chat template or the token limit, not the topology: the end of the run and the reports say so in one
sentence (:func:`no_tool_call_notice`).
"""

from __future__ import annotations

import json
from array import array
from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from topoeval.analysis.stats import Fold, is_scored, pass_at_k

#: A cell is flagged "never calls a tool" when at least this share of its scored episodes made no valid call ...
NO_TOOL_CALL_SHARE = 0.8
#: ... and it has at least this many scored episodes.
NO_TOOL_CALL_MIN_EPISODES = 2


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
    no_tool_call_share: float | None = Field(
        default=None, description="Share of episodes that made no valid tool call (None: no scored episode).")
    no_tool_call_episodes: int = Field(default=0, description="Episodes that made no valid tool call.")


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
        self.no_call = Fold()  # 1.0 per episode without a valid tool call, else 0.0
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
        valid = float(scores.get("tool_calls") or 0) - float(scores.get("invalid_calls") or 0)
        self.no_call.add(1.0 if valid <= 0 else 0.0)
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
        share = self.no_call.mean()
        return CellDiagnostics(
            samples=k,
            **grouped,
            **means,
            no_tool_call_share=share,
            no_tool_call_episodes=round((share or 0.0) * self.no_call.n),
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


def never_calls_tools(cell: dict[str, Any]) -> bool:
    """Whether a summary cell's model made no valid tool call in most of its episodes (at least
    :data:`NO_TOOL_CALL_SHARE` of at least :data:`NO_TOOL_CALL_MIN_EPISODES` scored episodes). Reference
    policies are never flagged (``noop`` calls nothing by design)."""
    from topoeval.formats import split_format
    from topoeval.policies.registry import is_reference

    d = cell.get("diagnostics") or {}
    share, n = d.get("no_tool_call_share"), cell.get("n_episodes", 0) - cell.get("n_errors", 0)
    if share is None or n < NO_TOOL_CALL_MIN_EPISODES or is_reference(split_format(str(cell.get("model")))[0]):
        return False
    return bool(share >= NO_TOOL_CALL_SHARE - 1e-9)


#: What to change when a model never calls a tool (the end of the sentence of :func:`no_tool_call_notice`).
NO_TOOL_CALL_CAUSES = (
    "its scores measure the call format, not the topology: the likely causes are a tool-call format or chat "
    "template other than the one the model was trained with (set it with --tool-format or MODEL@FORMAT; a "
    "served model: the server's tool-call parser, e.g. vLLM's --tool-call-parser) or replies cut off by the "
    "token limit (--max-tokens)")


def no_tool_call_notice(cells: list[dict[str, Any]]) -> str | None:
    """One sentence naming the cells flagged ``never_calls_tools`` (episodes without a valid call of the cell's
    scored ones), the likely causes and the flags that change them; None when no cell is flagged."""
    flagged = [c for c in cells if c.get("never_calls_tools")]
    if not flagged:
        return None
    # a prompt the model's context cannot hold ends each episode before its first reply: that is the cause then
    scored_total = sum(c.get("n_episodes", 0) - c.get("n_errors", 0) for c in flagged)
    outgrown = sum((c.get("status") or {}).get("limit:context_window", 0) for c in flagged)
    listed = []
    for c in flagged[:6]:
        d = c.get("diagnostics") or {}
        scored = c.get("n_episodes", 0) - c.get("n_errors", 0)
        listed.append(f"{c['model']} · {c['baseline']} · {c['topology']} ({d.get('no_tool_call_episodes', 0)} of "
                      f"{scored})")
    more = f" and {len(flagged) - 6} more cell(s)" if len(flagged) > 6 else ""
    causes = NO_TOOL_CALL_CAUSES
    if scored_total and outgrown >= NO_TOOL_CALL_SHARE * scored_total - 1e-9:
        causes = (f"{outgrown} of their {scored_total} episodes ended at the model's context window "
                  "(limit:context_window): the prompt with its tools outgrew what the model can read, so it never "
                  "replied; only a model with a longer context changes that")
    return (f"No valid tool call in at least {NO_TOOL_CALL_SHARE:.0%} of the episodes of {', '.join(listed)}{more}: "
            f"{causes}.")
