"""Anyone's training checkpoints, for ``topoeval sweep PROTOCOL --checkpoints DIR`` and the trainer callback.

Found in ``DIR`` (or ``DIR/checkpoints``, topoeval train's working folder):

- ``checkpoint-<step>/`` — HF Trainer and TRL: the folder holds either a PEFT adapter
  (``adapter_config.json`` + ``adapter_model.safetensors``) or full weights (``config.json`` + ``*.safetensors``);
- ``global_step_<step>/`` — verl. Its actor is in ``actor/``: FSDP shards
  (``model_world_size_<W>_rank_<r>.pt``), ``actor/huggingface/`` with the config and tokenizer — and the
  full HF weights too when the run saved them (``checkpoint.save_contents`` with ``hf_model``) — and,
  for a LoRA run, ``actor/lora_adapter/`` (a PEFT adapter). Weights only in FSDP shards must be merged
  first (``python -m verl.model_merger merge --backend fsdp --local_dir global_step_<step>/actor
  --target_dir global_step_<step>/actor/huggingface``).

A PEFT checkpoint whose base has a GGUF (the embedded SmolLM2-135M, or a ``--base-gguf`` file) is
converted once to a GGUF LoRA with llama.cpp's converter (:func:`gguf_lora`), cached in a folder by the
checkpoint's sha256 (its adapter weights, its adapter config and the base's config), and evaluated on
topoeval's llama-server with the adapter chosen per request; any other checkpoint goes to a server
command template (:mod:`topoeval.models.managed_server`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.core.files import write_json_atomic
from topoeval.models.adapters import file_sha256

_FOLDER = re.compile(r"^(?:checkpoint-|global_step_?)(\d+)$")
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


@dataclass(frozen=True)
class Checkpoint:
    """One saved checkpoint of a training run."""

    step: int
    #: the saved folder (``checkpoint-<step>/``, ``global_step_<step>/``)
    folder: Path
    #: what a server or the converter reads: the folder itself, ``actor/lora_adapter``, ``actor/huggingface``
    weights: Path
    #: a PEFT LoRA adapter (else full weights)
    lora: bool

    @property
    def name(self) -> str:
        """The name it is served and evaluated as."""
        return f"step-{self.step}"


def is_peft_adapter(folder: Path) -> bool:
    return all((folder / f).is_file() for f in ADAPTER_FILES)


def _has_weights(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(
        p.suffix in (".safetensors", ".bin") for p in folder.iterdir() if p.is_file())


def weights_of(folder: Path) -> tuple[Path, bool]:
    """(the weights folder, whether it is a LoRA adapter) of one saved checkpoint; a one-line UserError
    when it holds neither."""
    for candidate in (folder, folder / "actor" / "lora_adapter"):
        if is_peft_adapter(candidate):
            return candidate, True
    for candidate in (folder, folder / "actor" / "huggingface"):
        if candidate.is_dir() and _has_weights(candidate):
            return candidate, False
    if any((folder / "actor").glob("model_world_size_*_rank_*.pt")):
        raise UserError(f"{folder}: verl's FSDP shards only; merge them into HF weights first: python -m "
                        f"verl.model_merger merge --backend fsdp --local_dir {folder / 'actor'} --target_dir "
                        f"{folder / 'actor' / 'huggingface'}")
    raise UserError(f"{folder}: neither a PEFT adapter ({' + '.join(ADAPTER_FILES)}) nor full weights (config.json "
                    "and *.safetensors)")


def find_checkpoints(directory: str | Path, every: int | None = None) -> list[Checkpoint]:
    """The checkpoints saved in ``directory`` by step (every ``every``-th step and the last, when given)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"--checkpoints {directory}: no such folder")
    found = _scan(directory) or (_scan(directory / "checkpoints") if (directory / "checkpoints").is_dir() else [])
    if not found:
        raise UserError(f"--checkpoints {directory}: no checkpoint-<step>/ or global_step_<step>/ folders in it")
    steps = [s for s, _ in found]
    if len(set(steps)) != len(steps):
        raise UserError(f"--checkpoints {directory}: two folders of the same step")
    if every:
        found = [(s, p) for s, p in found if s % every == 0 or s == found[-1][0]]
    out = []
    for step, folder in found:
        weights, lora = weights_of(folder)
        out.append(Checkpoint(step=step, folder=folder, weights=weights, lora=lora))
    return out


def _scan(directory: Path) -> list[tuple[int, Path]]:
    return sorted((int(m.group(1)), p) for p in directory.iterdir() if p.is_dir() and (m := _FOLDER.match(p.name)))


def adapter_base(checkpoint: Checkpoint) -> str:
    """The base model its ``adapter_config.json`` names (``base_model_name_or_path``), or ''."""
    try:
        return str(json.loads((checkpoint.weights / "adapter_config.json").read_text()).get("base_model_name_or_path")
                   or "")
    except (OSError, ValueError, AttributeError):
        return ""


def on_embedded_base(checkpoint: Checkpoint) -> bool:
    """Whether a PEFT checkpoint was trained on SmolLM2-135M (the embedded model's weights): its adapter
    config names the embedded GGUF's folder or a SmolLM2-135M checkpoint."""
    import os

    from topoeval.models.embedded import embedded_gguf

    base = adapter_base(checkpoint)
    if not base:
        return False
    if "smollm2-135m" in base.lower():
        return True
    try:
        return os.path.realpath(base) == os.path.realpath(os.path.dirname(embedded_gguf()))
    except UserError:
        return False


def gguf_base_config(base_gguf: str | Path, cache: Path) -> Path:
    """A folder with the ``config.json`` of a GGUF model (all llama.cpp's LoRA converter reads of the
    base), read from the GGUF's metadata once and kept in ``cache``."""
    base_gguf = Path(base_gguf)
    folder = cache / f"base-{file_sha256(base_gguf)[:16]}"
    if (folder / "config.json").is_file():
        return folder
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    config = AutoConfig.from_pretrained(str(base_gguf.parent), gguf_file=base_gguf.name)
    if not getattr(config, "architectures", None):  # a GGUF's config names none; the converter maps by it
        config.architectures = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[config.model_type]]
    config.save_pretrained(folder)
    return folder


def gguf_lora(checkpoint: Checkpoint, base_config: Path, cache: Path) -> tuple[Path, bool]:
    """The GGUF LoRA of a PEFT checkpoint, converted once into ``cache`` (``<sha256[:16]>.gguf`` with a
    record ``<sha256[:16]>.json`` beside it); (its path, whether it was converted now)."""
    from topoeval.training.lora_gguf import convert_adapter

    parts = [file_sha256(checkpoint.weights / f) for f in ADAPTER_FILES]
    parts.append(hashlib.sha256((base_config / "config.json").read_bytes()).hexdigest())
    key = hashlib.sha256("".join(parts).encode()).hexdigest()
    gguf, record = cache / f"{key[:16]}.gguf", cache / f"{key[:16]}.json"
    old = json.loads(record.read_text()) if record.is_file() else {}
    if gguf.is_file() and old.get("key") == key and old.get("adapter_gguf", {}).get("sha256") == file_sha256(gguf):
        return gguf, False
    cache.mkdir(parents=True, exist_ok=True)
    convert_adapter(checkpoint.weights, base_config, gguf)
    write_json_atomic(record, {
        "key": key, "step": checkpoint.step, "checkpoint": str(checkpoint.weights),
        "source_sha256": parts[1], "base_config": str(base_config),
        "adapter_gguf": {"file": gguf.name, "bytes": gguf.stat().st_size, "sha256": file_sha256(gguf)},
    }, indent=1)
    return gguf, True


def weights_fingerprint(checkpoint: Checkpoint) -> str:
    """A served checkpoint's fingerprint: the sha256 of a LoRA's adapter weights; of a full checkpoint, of
    its weight files' names and sizes (hashing many GB would cost more than the sweep's first minute)."""
    if checkpoint.lora:
        return file_sha256(checkpoint.weights / "adapter_model.safetensors")
    files = sorted((p.name, p.stat().st_size) for p in checkpoint.weights.iterdir()
                   if p.is_file() and p.suffix in (".safetensors", ".bin"))
    return "files:" + hashlib.sha256(json.dumps(files).encode()).hexdigest()


def checkpoint_points(checkpoints: list[Checkpoint], cache: Path, *, serve: str | None = None,
                      base_gguf: str | None = None, echo=None) -> list:
    """The sweep points of ``checkpoints``: with ``serve``, each on a server started from that template
    (``direct:`` path); else each PEFT LoRA on a base with a GGUF (``base_gguf``, or the embedded model when
    the adapter was trained on SmolLM2-135M), converted once (:func:`gguf_lora`) and evaluated on
    topoeval's llama-server; anything else is a one-line UserError asking for ``--serve``."""
    from topoeval.analysis.sweep import SweepPoint
    from topoeval.models.managed_server import check_template

    if serve is not None:
        check_template(serve)
        shared = "{lora_modules}" in serve
        if shared and not all(c.lora for c in checkpoints):
            full = next(c for c in checkpoints if not c.lora)
            raise UserError(f"--serve with {{lora_modules}} serves LoRA checkpoints; {full.weights} holds full weights "
                            "(use {path}: a server per checkpoint)")
        return [SweepPoint(step=c.step, model=f"direct:{c.name}", name=c.name, serve=serve, path=str(c.weights),
                           weights=weights_fingerprint(c)) for c in checkpoints]
    points = []
    base_config = None
    for c in checkpoints:
        if not c.lora:
            raise UserError(f"{c.weights}: full weights; evaluate them on a server: --serve 'vllm serve {{path}} "
                            "--port {port} --served-model-name {name}' (docs/sweeping.md)")
        if base_gguf is None and not on_embedded_base(c):
            raise UserError(f"{c.weights}: a LoRA of '{adapter_base(c) or 'an unnamed base'}', which has no GGUF here; "
                            "pass --base-gguf PATH (its base as GGUF) or --serve a server command (docs/sweeping.md)")
        if base_config is None:
            from topoeval.models.embedded import embedded_gguf

            base_config = gguf_base_config(base_gguf or embedded_gguf(), cache)
        gguf, converted = gguf_lora(c, base_config, cache)
        if echo is not None:
            echo(f"step {c.step}: {'converted' if converted else 'cached'} {c.weights} -> {gguf}")
        points.append(SweepPoint(step=c.step, model=f"gguf:{base_gguf}" if base_gguf else "smollm2-135m",
                                 name=c.name, lora=str(gguf)))
    return points
