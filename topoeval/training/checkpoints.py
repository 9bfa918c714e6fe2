"""A training run's checkpoints as adapter models, for ``topoeval sweep``.

Each kept checkpoint (``<work>/checkpoints/checkpoint-<step>/``, PEFT adapter weights) is converted
with llama.cpp's LoRA converter to ``<folder>/<name>-step<step>.gguf``, with a small record beside it
(its sha256, the step, the source checkpoint), so the models ``<name>-step<step>`` load through the
same adapter path as the shipped adapters (``$TOPOEVAL_ADAPTERS`` names the folder). Step 0 is the
policy the training started from: the base model, or for GRPO from the SFT adapter that adapter.
A conversion already made for the same checkpoint files is reused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from topoeval.analysis.sweep import SweepPoint
from topoeval.core.errors import UserError
from topoeval.models.adapters import BASE_NAME, adapter_name


def read_record(path: str | Path) -> tuple[dict[str, Any], Path]:
    """A training record (``<name>.json`` written by ``topoeval train``) and its path."""
    path = Path(path)
    if path.is_dir():
        found = [p for p in sorted(path.glob("*.json")) if _is_record(p)]
        if len(found) != 1:
            raise UserError(f"{path}: {'no' if not found else 'more than one'} training record here; "
                            "name the .json file")
        path = found[0]
    if not path.exists():
        raise UserError(f"{path}: no such training record")
    if not _is_record(path):
        raise UserError(f"{path}: not a training record of topoeval train (a <name>.json with steps and config)")
    return json.loads(path.read_text(encoding="utf-8")), path


def _is_record(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "steps" in data and "config" in data and "model" in data


def sweep_training(record: dict[str, Any], path: str | Path, every: int | None = None) -> dict[str, Any]:
    """What a sweep's summary says of the training it evaluates: its model, method, record and steps,
    and how far apart the evaluated checkpoints are (``every`` when the sweep picks every ``every``-th,
    else the run's checkpoint interval)."""
    return {"model": record["model"], "method": record.get("method", "sft"), "record": str(path),
            "steps": record["steps"], "every": every or (record.get("checkpoints") or {}).get("every")
            or (record.get("config") or {}).get("save_steps")}


def checkpoint_folder(record: dict[str, Any], work_dir: str | Path | None = None) -> Path:
    """Where the run's checkpoints are: ``work_dir``/checkpoints, the record's, or ./runs/train/<name>/checkpoints."""
    if work_dir is not None:
        return Path(work_dir) / "checkpoints"
    recorded = (record.get("checkpoints") or {}).get("folder")
    return Path(recorded) if recorded else Path("runs") / "train" / record["model"] / "checkpoints"


def start_model(record: dict[str, Any]) -> str:
    """The model of step 0: the SFT adapter a GRPO run started from, else the base."""
    init = record.get("init") or {}
    if record.get("method") == "grpo" and init.get("kind") == "sft":
        return adapter_name(record["train_topology"])
    return BASE_NAME


def checkpoint_points(record: dict[str, Any], folder: Path, work_dir: str | Path | None = None,
                      every: int | None = None) -> list[SweepPoint]:
    """Convert each kept checkpoint (every ``every``-th step when given) into ``folder``; the sweep points."""
    from topoeval.training.lora_gguf import convert_adapter
    from topoeval.training.sft import _file_sha256

    ckpts = checkpoint_folder(record, work_dir)
    found = sorted((int(p.name.split("-")[1]), p) for p in ckpts.glob("checkpoint-*") if p.name.split("-")[1].isdigit())
    if every:
        found = [(s, p) for s, p in found if s % every == 0 or s == found[-1][0]]
    if not found:
        raise UserError(f"{ckpts}: no checkpoint-<step> folders (pass --work-dir to the training's working folder)")
    base_config = ckpts.parent / "base"
    if not (base_config / "config.json").is_file():
        raise UserError(f"{base_config}: no config.json of the base (written by topoeval train)")
    folder.mkdir(parents=True, exist_ok=True)
    points = [SweepPoint(step=0, model=start_model(record))]
    for step, path in found:
        weights = path / "adapter_model.safetensors"
        if not weights.is_file():
            raise UserError(f"{path}: no adapter_model.safetensors (not a LoRA checkpoint)")
        name = f"{record['model']}-step{step}"
        gguf, meta = folder / f"{name}.gguf", folder / f"{name}.json"
        source_sha = _file_sha256(weights)
        old = json.loads(meta.read_text()) if meta.is_file() else {}
        if not (gguf.is_file() and old.get("source_sha256") == source_sha):
            convert_adapter(path, base_config, gguf)
            meta.write_text(json.dumps({
                "model": name, "step": step, "training": record["model"], "method": record.get("method", "sft"),
                "checkpoint": str(path), "source_sha256": source_sha,
                "adapter_gguf": {"file": gguf.name, "bytes": gguf.stat().st_size, "sha256": _file_sha256(gguf)},
            }, indent=1) + "\n", encoding="utf-8")
        points.append(SweepPoint(step=step, model=name))
    return points
