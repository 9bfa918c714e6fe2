"""The declared schema of every published config: one ``datasets.Features`` per config.

Every parquet file of a config is written from its schema, never from types inferred per file: a
column that is all null in one file (``final_answer`` of a model that never answers, ``risk`` of
one that never commits) is still ``float64`` / ``string`` there, so the Hub's viewer and
``datasets.load_dataset(REPO, CONFIG)`` read all of a config's files as one table. Rows are
normalised to the schema first: a column a row lacks (a row published by an older topoeval) is
filled with the column's default.
"""

from __future__ import annotations

from typing import Any

#: results / latest: one row per protocol × model × baseline × topology × metric.
RESULT_COLUMNS: dict[str, str] = {
    "protocol": "string", "model": "string", "baseline": "string", "topology": "string", "role": "string",
    "suite": "string", "metric": "string", "mean": "float64", "std": "float64", "se": "float64",
    "ci_low": "float64", "ci_high": "float64", "n": "int64", "pass_at_k": "list[float64]",
    "pass_hat_k": "list[float64]", "n_errors": "int64", "incomplete": "bool", "protocol_sha256": "string",
    "task_set_sha256": "string", "samples": "int64", "topoeval_version": "string", "date": "string",
    "run_id": "string", "reproduce": "string",
    # JSON of run.json's inference fingerprint of the row's model (a local llama.cpp model's build,
    # batching and CPU features); "" for remote and reference backends
    "inference": "string",
}
#: episodes: one row per episode (the conversation, calls and events as JSON text).
SCORE_COLUMNS = ("success", "f1", "dq", "clarification", "priority", "risk", "parallelism", "efficiency")
EPISODE_COLUMNS: dict[str, str] = {
    "protocol": "string", "model": "string", "baseline": "string", "topology": "string", "role": "string",
    "episode_id": "string", "task_id": "string", "family": "string", "sample": "int64", "status": "string",
    "turns": "int64", "tool_calls": "int64", **{c: "float64" for c in SCORE_COLUMNS},
    # collateral damage beside success (null where the suite defines no scope), and the reading as JSON
    "collateral": "float64", "collateral_irreversible": "float64", "collateral_entities": "float64",
    "collateral_report": "string", "final_answer": "string",
    "errors": "string", "messages": "string", "calls": "string", "events": "string",
    "protocol_sha256": "string", "task_set_sha256": "string",
}
#: matrix: one row per protocol × model × baseline × topology × metric (success, dq) of a transfer-matrix run.
MATRIX_COLUMNS: dict[str, str] = {
    "protocol": "string", "model": "string", "baseline": "string", "train_topology": "string", "topology": "string",
    # the topology's column in the matrix (its place in the protocol)
    "column": "int64",
    # whether ``topology`` is the model's own (the diagonal); own_mean: the model's score on its own topology
    "own": "bool", "metric": "string", "mean": "float64", "ci_low": "float64", "ci_high": "float64", "n": "int64",
    "own_mean": "float64", "transfer_ratio": "float64",
    # why transfer_ratio is null off the diagonal (own score ties with 0, no train topology, ...); "" when set
    "ratio_note": "string",
    # samples per task and the sampling temperature the cell was measured with (greedy: 1 and 0.0)
    "samples": "int64", "temperature": "float64",
    # with samples k >= 2, success only: pass@k and pass^k at that k, and the share of tasks whose k samples all
    # got the same success (a GRPO group with no signal); null otherwise
    "pass_at_k": "float64", "pass_hat_k": "float64", "zero_signal_share": "float64",
    "protocol_sha256": "string", "task_set_sha256": "string", "date": "string",
    "run_id": "string", "reproduce": "string",
}
#: What a results or episodes row that lacks a column gets (others: null).
DEFAULTS: dict[str, Any] = {"n_errors": 0, "incomplete": False, "pass_at_k": [], "pass_hat_k": [], "errors": "[]",
                            "inference": "", "samples": 1}
#: What a matrix row that lacks a column gets (others: null). Rows published before ``samples`` was a column
#: were greedy, one sample per task.
MATRIX_DEFAULTS: dict[str, Any] = {"own": False, "ratio_note": "", "samples": 1}


def features(columns: dict[str, str]):
    """The ``datasets.Features`` of a column table."""
    import datasets
    from datasets import Features, Value

    listing = getattr(datasets, "List", None) or datasets.Sequence  # List since datasets 4
    return Features({name: listing(Value(kind[5:-1])) if kind.startswith("list[") else Value(kind)
                     for name, kind in columns.items()})


def conform(rows: list[dict[str, Any]], columns: dict[str, str],
            defaults: dict[str, Any] = DEFAULTS) -> list[dict[str, Any]]:
    """``rows`` with exactly the schema's columns, in its order (missing ones from ``defaults``, else null)."""
    return [{name: row.get(name, defaults.get(name)) for name in columns} for row in rows]
