"""A run folder's ``run.json``: created for a new run, reopened (and checked to be the same run) for a resumed
one, and the run's id when no ``--out`` names its folder (:mod:`topoeval.runner.run` calls these)."""

from __future__ import annotations

import platform
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.provenance import git_provenance
from topoeval.core.version import __version__
from topoeval.protocol.schema import Protocol
from topoeval.runner.config import check_identity, digest
from topoeval.runner.store import RUN_JSON, read_json, write_json


def check_run_json(path: Path, identity: dict[str, Any], protocol: str) -> dict | None:
    """An existing run.json, checked to hold a run of the same identity (None if new): the protocol's name
    first (a run of another protocol is refused naming both), then the settings (a difference is named),
    then the protocol version and the task set."""
    if not path.exists():
        return None
    meta = read_json(path)
    recorded = meta.get("protocol")
    old = recorded.get("name") if isinstance(recorded, dict) else None
    if old != protocol:
        held = f"protocol {old!r}" if isinstance(old, str) else "no protocol this topoeval can read"
        raise UserError(f"{path.parent}: holds a run of {held}, this run is of protocol {protocol!r}; "
                        "use another out folder")
    check_identity(path.parent, meta.get("identity"), identity)
    if meta.get("protocol_sha256") != identity["protocol_sha256"]:
        raise UserError(f"{path.parent}: holds a run of another version of protocol {protocol!r} (it was "
                        "edited since); use another out folder")
    if meta.get("task_set_sha256") != identity["task_set_sha256"]:
        raise UserError(f"{path.parent}: holds a run over a different task set (tasks?); use another out folder")
    return meta


def open_run_json(run_dir: Path, protocol: Protocol, identity: dict[str, Any], names: list[str], k: int,
                   counts: dict[str, int], weights: dict[str, str]) -> dict:
    """Create run.json, or reopen it for a resumed run (checked by :func:`check_run_json`: a model whose
    weights or inference changed is refused, since its finished episodes belong to the old ones)."""
    path = run_dir / RUN_JSON
    meta = check_run_json(path, identity, protocol.name)
    if meta is not None:
        meta["models"] = list(dict.fromkeys([*meta.get("models", []), *names]))
        meta["identity"]["models"] = {**meta["identity"].get("models", {}), **identity["models"]}
        meta["resumed"] = meta.get("resumed", 0) + 1
    else:
        run_dir.mkdir(parents=True, exist_ok=True)
        meta = {
            "protocol": protocol.model_dump(mode="json"),
            "protocol_sha256": identity["protocol_sha256"],
            "task_set_sha256": identity["task_set_sha256"],
            "identity": identity,
            "n_tasks": counts,
            "models": names,
            "samples": k,
            "seeds": {
                "tasks": {s: getattr(protocol.tasks, s).seed
                          for s in ("test", "fewshot", "train", "dev") if getattr(protocol.tasks, s)},
                "sampling": protocol.sampling.seed,
            },
            "topoeval_version": __version__,
            # topoeval's own commit (and git_dirty) when imported from its checkout; None from a wheel
            "git_commit": None,
            **git_provenance(),
            "python": platform.python_version(),
            "started": now(),
            "ended": None,
        }
    if weights:
        meta["weights"] = {**meta.get("weights", {}), **weights}
    write_json(path, meta)
    return meta


def run_id(names: list[str], identity: dict[str, Any], k: int) -> str:
    """``<models>-<digest>``: the digest covers the run's whole identity (protocol as run, task set,
    settings, each model's weights and inference fingerprint) and the sample count."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", "+".join(names))[:48]
    return f"{slug}-{digest([identity, ','.join(names), k])[:8]}"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
