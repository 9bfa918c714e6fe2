"""The tables a publish writes: results rows, episode rows, the merge, and the latest view."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from topoeval.analysis.summary import COLLATERAL_METRICS
from topoeval.core.errors import UserError
from topoeval.core.safe_paths import safe_component
from topoeval.core.secrets import mask_secrets
from topoeval.core.version import __version__
from topoeval.publish.schema import EPISODE_COLUMNS, SCORE_COLUMNS
from topoeval.runner.lock import check_idle
from topoeval.runner.shards import PLAN, PlannedKeys, Unplanned, read_plan, warn_unplanned
from topoeval.runner.store import RUN_JSON, read_episodes, read_json

#: A results row is replaced by a newer publish of the same key. ``samples`` is in every key: k samples per task
#: at a temperature is another measurement than one greedy sample, and neither replaces the other.
RESULT_KEY = ("protocol", "model", "baseline", "topology", "task_set_sha256", "samples")
#: A matrix row is replaced by a newer publish of the same key.
MATRIX_KEY = ("protocol", "model", "baseline", "topology", "metric", "task_set_sha256", "samples")
#: The latest view keeps, per model, the newest row of each of these.
LATEST_KEY = ("protocol", "model", "baseline", "topology", "metric", "samples")


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(run.json, summary.json) of a finished run folder; one line naming the process that still writes it,
    if one does (a run in progress is not published)."""
    run_dir = Path(run_dir)
    check_idle(run_dir, "publish")
    try:
        meta, summary = read_json(run_dir / RUN_JSON), read_json(run_dir / "summary.json")
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{run_dir}: not a finished run folder ({exc})") from None
    if not isinstance(meta, dict) or not isinstance(summary, dict) or not isinstance(summary.get("cells"), list):
        raise UserError(f"{run_dir}: not a finished run folder (run.json or summary.json is not what topoeval writes)")
    return meta, summary


def planned_keys(run_dir: str | Path, meta: dict[str, Any]) -> PlannedKeys | None:
    """Which keys the run planned (:class:`~topoeval.runner.shards.PlannedKeys`); None for a folder written
    before plan.json existed (then nothing is left out)."""
    if not (Path(run_dir) / PLAN).exists():
        return None
    try:
        return PlannedKeys(read_plan(Path(run_dir)), [meta])
    except ValidationError:
        raise UserError(f"{run_dir}: its {PLAN} is not one topoeval wrote; nothing was published") from None


def run_samples(meta: dict[str, Any]) -> int:
    """Samples per task of a run (its run.json's ``samples``; 1 where none is recorded)."""
    return int(meta.get("samples") or 1)


def reproduce_command(meta: dict[str, Any], model: str, baseline: str) -> str:
    """The `topoeval run` command that reproduces one row (the protocol hash pins the rest)."""
    shots = re.match(r"(\d+)-shot", baseline)
    parts = [f"topoeval run {meta['protocol']['name']} --model {model}"]
    if shots:
        parts.append(f"--shots {shots.group(1)}")
    for name in meta.get("overrides", {}).get("topologies") or []:
        parts.append(f"--topology {name}")
    for key, flag in (("tasks", "--tasks"), ("samples", "--samples"), ("max_turns", "--max-turns"),
                      ("max_tokens", "--max-tokens"), ("temperature", "--temperature"), ("top_p", "--top-p")):
        if key in meta.get("overrides", {}):
            parts.append(f"{flag} {meta['overrides'][key]}")
    return " ".join(parts)


def result_rows(run_dir: str | Path, warn: bool = True) -> list[dict[str, Any]]:
    """One row per model × baseline × topology × metric of a run. Every cell has a ``success`` row,
    also one whose episodes all ended in error (its mean then null); ``n_errors`` and ``incomplete``
    repeat the cell's count of episodes left out. Collateral damage (``collateral``, ``collateral_irreversible``,
    ``collateral_entities``) has its rows, with mean, CI and n (tasks), beside success wherever a cell defines it; a
    cell whose suite defines no scope has none, rather than a 0. Cells the run never planned are left out (one
    :class:`~topoeval.runner.shards.Unplanned` line unless ``warn`` is false)."""
    meta, summary = load_run(run_dir)
    date = meta.get("ended") or meta.get("started")
    planned = planned_keys(run_dir, meta)
    cells = [c for c in summary["cells"]
             if planned is None or planned.cell(c.get("model"), c.get("baseline"), c.get("topology"))]
    if warn and len(cells) < len(summary["cells"]):
        warnings.warn(f"{run_dir}: left {len(summary['cells']) - len(cells)} summary cell(s) out of the publish: "
                      "their model, baseline and topology are not in the run's plan (plan.json)", Unplanned,
                      stacklevel=2)
    rows = []
    for cell in cells:
        metrics = dict(cell["metrics"])
        metrics.setdefault("success", {"mean": None, "std": None, "ci95": None, "n": 0})
        for metric, stats in sorted(metrics.items()):
            if not isinstance(stats, dict) or "mean" not in stats:
                continue
            ci = stats.get("ci95") or [None, None]
            pass_k, pass_hat = stats.get("pass@k") or {}, stats.get("pass^k") or {}
            rows.append({
                "protocol": summary["protocol"], "model": cell["model"], "baseline": cell["baseline"],
                "topology": cell["topology"], "role": cell["role"], "suite": cell["suite"], "metric": metric,
                "mean": stats["mean"], "std": stats.get("std"), "se": stats.get("se"),
                "ci_low": ci[0], "ci_high": ci[1], "n": stats.get("n", 0),
                "pass_at_k": [pass_k[k] for k in sorted(pass_k, key=int)],
                "pass_hat_k": [pass_hat[k] for k in sorted(pass_hat, key=int)],
                "n_errors": cell.get("n_errors", 0), "incomplete": bool(cell.get("n_errors", 0)),
                "protocol_sha256": summary["protocol_sha256"], "task_set_sha256": summary["task_set_sha256"],
                "samples": run_samples(meta), "topoeval_version": meta.get("topoeval_version", __version__),
                "date": date, "run_id": summary.get("run_id", Path(run_dir).name),
                "reproduce": reproduce_command(meta, cell["model"], cell["baseline"]),
                "inference": json.dumps(meta.get("inference", {}).get(cell["model"]), sort_keys=True)
                if meta.get("inference", {}).get(cell["model"]) else "",
            })
    return rows


def matrix_rows(run_dir: str | Path) -> list[dict[str, Any]]:
    """The ``matrix`` config's rows of a transfer-matrix run (summary.json's ``matrix``); [] for other runs."""
    meta, summary = load_run(run_dir)
    matrix = summary.get("matrix") or {}
    samples = run_samples(meta)
    planned = planned_keys(run_dir, meta)
    temperature = ((meta.get("identity") or {}).get("settings") or {}).get("temperature")
    rows = []
    for r in matrix.get("rows") or []:
        if planned is not None and r["model"] not in planned.models:
            continue
        for metric in ("success", "dq"):
            for column, (topo, cell) in enumerate(r["cells"].items()):
                point = cell[metric]
                ci = point.get("ci95") or [None, None]
                own = topo == r["train_topology"]
                note = "" if own else (r["nulls"].get(f"transfer_ratio.{metric}.{topo}")
                                       or ("" if r["train_topology"] else r["nulls"].get("train_topology", "")))
                rows.append({
                    "protocol": summary["protocol"], "model": r["model"], "baseline": r["baseline"],
                    "train_topology": r["train_topology"], "topology": topo, "column": column, "own": own,
                    "metric": metric,
                    "mean": point.get("mean"), "ci_low": ci[0], "ci_high": ci[1], "n": point.get("n", 0),
                    "own_mean": r["own"][metric], "transfer_ratio": None if own else
                    r["transfer_ratio"][metric].get(topo), "ratio_note": note,
                    "samples": samples, "temperature": temperature,
                    "pass_at_k": _at_k(point.get("pass@k"), samples), "pass_hat_k": _at_k(point.get("pass^k"), samples),
                    "zero_signal_share": point.get("zero_signal_share"),
                    "protocol_sha256": summary["protocol_sha256"], "task_set_sha256": summary["task_set_sha256"],
                    "date": meta.get("ended") or meta.get("started"),
                    "run_id": summary.get("run_id", Path(run_dir).name),
                    "reproduce": reproduce_command(meta, r["model"], r["baseline"]) + (
                        f" --trained-on {r['model']}={r['train_topology']}" if r.get("train_source") == "--trained-on"
                        else ""),
                })
    return rows


def _at_k(by_k: dict[str, float] | None, k: int) -> float | None:
    """pass@k or pass^k at k from a cell's ``{"1": ..., "k": ...}`` (null with one sample, or none recorded)."""
    return None if k < 2 or not by_k else by_k.get(str(k))


def episode_rows(run_dir: str | Path, summary: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per episode (its latest record): labels, every score, the errors, and the
    conversation as JSON. An episode that ended in error has null scores. ``summary``: the run's
    summary.json, when the caller has loaded it already (:func:`load_run`)."""
    meta, loaded = load_run(run_dir)
    summary = loaded if summary is None else summary
    planned = planned_keys(run_dir, meta)
    rows = []
    left_out = 0
    for rec in read_episodes(run_dir):  # read only, every record checked: a run still writing is never disturbed
        if planned is not None and not planned(rec["key"]):
            left_out += 1
            continue
        scores = rec["scores"]
        rows.append({
            "protocol": summary["protocol"], "model": rec["model"], "baseline": rec["baseline"],
            "topology": rec["topology"], "role": rec.get("role"), "episode_id": rec["episode_id"],
            "task_id": rec["task_id"], "family": _text(rec.get("family")), "sample": rec.get("sample", 0),
            "status": rec["status"], "turns": _count(rec.get("turns")), "tool_calls": _count(scores.get("tool_calls")),
            **{c: (None if scores.get(c) is None or rec["status"] == "error" else float(scores[c]))
               for c in SCORE_COLUMNS},
            # beside success; each once the episodes' schema declares it (publish/schema.py's EPISODE_COLUMNS)
            **{c: v for c, v in collateral_columns(rec).items() if c in EPISODE_COLUMNS},
            "final_answer": _text(rec.get("final_answer")),
            "errors": json.dumps([mask_secrets(str(e)) for e in rec.get("errors") or []], ensure_ascii=False),
            "messages": json.dumps(rec.get("messages", []), ensure_ascii=False),
            "calls": json.dumps(rec.get("calls", []), ensure_ascii=False),
            "events": json.dumps(rec.get("events", []), ensure_ascii=False),
            "protocol_sha256": summary["protocol_sha256"], "task_set_sha256": summary["task_set_sha256"],
        })
    warn_unplanned(left_out, str(run_dir), "publish")
    return rows


def collateral_columns(rec: dict[str, Any]) -> dict[str, Any]:
    """An episode row's collateral damage, beside success and never in it (docs/metrics.md): its scores
    ``collateral``, ``collateral_irreversible`` (0/1) and ``collateral_entities`` (a count), and
    ``collateral_report``, the reading's JSON (every entity changed in scope and out, with the calls that wrote
    it); all null where the suite defines no scope, the record predates collateral, or the episode ended in error."""
    given = rec.get("scores")
    scores: dict[str, Any] = given if isinstance(given, dict) else {}
    error = rec.get("status") == "error"
    out: dict[str, Any] = {
        c: None if error or isinstance(scores.get(c), bool) or not isinstance(scores.get(c), (int, float))
        else float(scores[c]) for c in COLLATERAL_METRICS}
    reading = rec.get("collateral")
    out["collateral_report"] = (None if error or not isinstance(reading, dict)
                                else json.dumps(reading, ensure_ascii=False, default=str))
    return out


def _count(value: Any) -> int:
    """A count column's value (0 for what is not a count: a record may come from anyone)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _text(value: Any) -> str | None:
    """A text column's value: a string as it is, anything else as its JSON (None stays None)."""
    return value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def merge(existing: list[dict[str, Any]], new: list[dict[str, Any]], key: tuple[str, ...] = RESULT_KEY,
          ) -> list[dict[str, Any]]:
    """``existing`` without the rows whose ``key`` ``new`` publishes again, then ``new``."""
    fresh = {tuple(r[k] for k in key) for r in new}
    kept = [r for r in existing if tuple(r[k] for k in key) not in fresh]
    return sorted(kept + new, key=lambda r: (r["protocol"], r["model"], r["baseline"], r["topology"], r["metric"]))


def latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per protocol × model × baseline × topology × metric, the most recently dated row."""
    best: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        key = tuple(r[k] for k in LATEST_KEY)
        if key not in best or (r["date"] or "") > (best[key]["date"] or ""):
            best[key] = r
    return sorted(best.values(), key=lambda r: tuple(r[k] for k in LATEST_KEY))


def episodes_path(protocol: str, model: str, baseline: str, task_set: str, samples: int = 1) -> str:
    """Where one (protocol, model, baseline, task set, samples)'s episodes live in the repo (republish
    overwrites; k samples of the same tasks live beside the greedy ones, ``-k<samples>``). Each name is one
    safe path component (:func:`~topoeval.core.safe_paths.safe_component`): a record's ``../`` stays a name."""
    name = safe_component(f"{baseline}-{str(task_set)[:12]}{f'-k{int(samples)}' if samples > 1 else ''}")
    return f"episodes/{safe_component(protocol)}/{safe_component(model)}/{name}.parquet"
