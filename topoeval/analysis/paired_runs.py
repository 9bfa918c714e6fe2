"""Paired comparisons read from run folders: two models of one run, or two runs of one protocol and task set
(what ``topoeval compare`` prints and ``--json`` / ``--out`` write). Only reads: summary.json for the
protocol and task set, episodes.jsonl for the per-task values (:mod:`topoeval.analysis.paired`)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from topoeval.analysis.paired import PAIRED_ALPHA, RULE, PairedComparison, compare_models
from topoeval.core.errors import UserError

#: The schema of the JSON ``topoeval compare --json`` prints and ``--out`` writes.
SCHEMA = "topoeval.compare/1"


class PairedRuns(BaseModel):
    """The paired comparisons of ``topoeval compare`` (``--json``, ``--out``)."""

    schema_: str = Field(default=SCHEMA, alias="schema", description="``topoeval.compare/1``.")
    protocol: str = Field(description="The protocol both sides ran.")
    task_set_sha256: str | None = Field(description="The task set both sides ran (None: an old run without one).")
    runs: list[str] = Field(description="The run folders read (one: two models of one run).")
    rule: str = Field(description="The paired verdict rule, in words.")
    alpha: float = Field(description="PAIRED_ALPHA: the McNemar p under which a cell has a winner.")
    comparisons: list[PairedComparison] = Field(description="One per pair of sides: A against B, cell by cell.")

    model_config = {"populate_by_name": True}

    def dump(self) -> dict[str, Any]:
        """As JSON data, ``schema`` first."""
        return self.model_dump(mode="json", by_alias=True)


def _models(summary: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(c["model"] for c in summary["cells"]))


def _check_model(model: str, run_dir: Path, have: list[str]) -> None:
    if model not in have:
        close = difflib.get_close_matches(model, have, n=1)
        raise UserError(f"{run_dir}: no model '{model}'" + (f" (did you mean '{close[0]}'?)" if close else "")
                        + f"; its models: {', '.join(have)}")


def _task_ids(records: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(r["topology"], r["task_id"]) for r in records}


def pair_sides(run_dirs: Sequence[Path], summaries: list[dict[str, Any]],
               models: Sequence[str] | None) -> list[tuple[int, str, int, str]]:
    """Which (run index, model) is compared with which: ``models`` A B (from the one run, or A from the
    first run and B from the second); without ``models``, two runs of one model each are that pair, and
    two runs otherwise pair each model they share. A one-line UserError when none can be chosen."""
    if models:
        if len(models) != 2:
            raise UserError(f"--models takes two models (A and B), not {len(models)}")
        ia, ib = (0, 0) if len(run_dirs) == 1 else (0, 1)
        _check_model(models[0], run_dirs[ia], _models(summaries[ia]))
        _check_model(models[1], run_dirs[ib], _models(summaries[ib]))
        return [(ia, models[0], ib, models[1])]
    if len(run_dirs) != 2:
        raise UserError("a paired comparison needs two runs, or one run and --models A B")
    ma, mb = _models(summaries[0]), _models(summaries[1])
    if len(ma) == 1 and len(mb) == 1:
        return [(0, ma[0], 1, mb[0])]
    shared = [m for m in ma if m in mb]
    if not shared:
        raise UserError(f"the two runs share no model ({', '.join(ma)} against {', '.join(mb)}): name the two to "
                        "compare with --models A B")
    return [(0, m, 1, m) for m in shared]


def paired_runs(run_dirs: Sequence[str | Path], models: Sequence[str] | None = None) -> PairedRuns:
    """The paired comparison(s) of one run's two ``models``, or of two runs (see :func:`pair_sides`). Runs of
    different protocols or task sets (task_set_sha256, or the task ids of the episodes) are a one-line
    UserError: a paired test needs the same tasks on both sides."""
    from topoeval.runner.store import read_episodes, read_json

    dirs = [Path(d) for d in run_dirs]
    if not 1 <= len(dirs) <= 2:
        raise UserError(f"a paired comparison reads one run (with --models A B) or two, not {len(dirs)}")
    summaries = [read_json(d / "summary.json") for d in dirs]
    protocols = {s["protocol"] for s in summaries}
    if len(protocols) > 1:
        raise UserError(f"runs of different protocols cannot be paired: {', '.join(sorted(protocols))}")
    shas = [s.get("task_set_sha256") for s in summaries]
    if len(set(shas)) > 1:
        raise UserError(f"runs of different task sets cannot be paired (task_set_sha256 {shas[0] or 'none'} against "
                        f"{shas[1] or 'none'}): a paired test needs the same tasks on both sides")
    sides = pair_sides(dirs, summaries, models)
    two = len(dirs) == 2 and dirs[0].resolve() != dirs[1].resolve()
    records = [read_episodes(d) for d in dirs] if two else [read_episodes(dirs[0])] * 2
    if len(dirs) == 2 and shas[0] is None and _task_ids(records[0]) != _task_ids(records[1]):
        raise UserError("runs of different task sets cannot be paired (their episodes' task ids differ)")
    label = (lambda i, m: f"{m} ({dirs[i].name})") if len(dirs) == 2 else (lambda i, m: m)
    comparisons = [compare_models(records[ia], ma, records[ib], mb, label(ia, ma), label(ib, mb))
                   for ia, ma, ib, mb in sides]
    return PairedRuns(protocol=summaries[0]["protocol"], task_set_sha256=shas[0], runs=[str(d) for d in dirs],
                      rule=RULE, alpha=PAIRED_ALPHA, comparisons=comparisons)
