"""Fine-tuning the embedded model on a protocol's train topology: LoRA on the CPU, written as a GGUF adapter.

``topoeval train PROTOCOL`` (``make train PROTOCOL=wiki_to_travel``):

1. exports the oracle's conversations on ``n`` tasks of the train split (:mod:`topoeval.training.sft_data`;
   ``--data DIR`` adds more exports, e.g. a run's successful episodes);
2. renders them with the ``topoeval-tools`` chat template (:mod:`topoeval.models.llamacpp_template`:
   the exact text the embedded model reads at inference) and labels only the assistant tokens;
3. trains a LoRA adapter (r 16 on every projection) with TRL's ``SFTTrainer`` on the CPU (bf16
   autocast where the CPU computes bf16 natively, float32 elsewhere), with a progress bar and a
   checkpoint every ``save_steps`` steps: the same command resumes an interrupted run from its last
   checkpoint;
4. converts the adapter with llama.cpp's converter (:mod:`topoeval.training.lora_gguf`) to
   ``runs/adapters/smollm2-135m-<train topology>.gguf``, and writes the training record beside it
   (``.json``: data hash, command, seed, steps, loss curve, time, versions, the GGUF's sha256).

Output goes where the user is, never inside the installed package: working files (the data,
checkpoints, the PEFT adapter) to ``./runs/train/<model name>/``, the adapter and its record to
``./runs/adapters/`` (``--out-dir`` elsewhere). A run uses it with ``TOPOEVAL_ADAPTERS=runs/adapters``
(:mod:`topoeval.models.adapters`: those folders are searched before the shipped adapters). ``make
train`` in a checkout passes ``--out-dir adapters``: the repository's folder of shipped adapters.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import time
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from topoeval.core.errors import UserError
from topoeval.models.adapters import adapter_name

#: LoRA on every attention and MLP projection of a Llama-style block
TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
STATE_FILE = "train_state.json"
#: default output folders, relative to the current folder (resolved when a training starts)
RUNS = Path("runs")
ADAPTERS_OUT = RUNS / "adapters"


class TrainConfig(BaseModel):
    """What ``topoeval train`` trains, and how."""

    model_config = ConfigDict(extra="forbid")

    protocol: str = Field(description="Protocol name or YAML path; its train topology is trained on.")
    name: str | None = Field(default=None, description="Model name of the adapter (default smollm2-135m-<train "
                                                       "topology>).")
    n: int = Field(default=300, ge=1, description="Train-split tasks the oracle solves for the training conversations.")
    data: list[str] = Field(default_factory=list, description="More SFT export folders to train on (topoeval export "
                                                              "--format sft).")
    rationale: bool = Field(default=False, description="The oracle's turns carry the suite's line of reasoning "
                                                       "before their calls (sft_data's RATIONALE_FORMAT); the "
                                                       "adapter is then run with text before calls allowed.")
    epochs: float = Field(default=2.0, gt=0, description="Passes over the conversations.")
    max_steps: int | None = Field(default=None, ge=1, description="Stop after this many optimizer steps (overrides "
                                                                  "epochs).")
    learning_rate: float = Field(default=2e-4, gt=0, description="Peak learning rate (cosine decay, 3% warm-up).")
    lora_r: int = Field(default=16, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(default=32, ge=1, description="LoRA alpha (scale alpha / r).")
    batch_size: int = Field(default=1, ge=1, description="Conversations per step.")
    max_length: int | None = Field(default=None, ge=16, description="Truncate conversations to this many tokens (None: "
                                                                    "never).")
    seed: int = Field(default=0, description="Seed of the adapter's initialisation and the data order.")
    base: str = Field(default="embedded", description="'embedded' (the SmolLM2-135M GGUF) or a transformers checkpoint "
                                                      "folder.")
    bf16: bool | None = Field(default=None, description="bf16 autocast on the CPU; None: on where the CPU computes "
                                                      "bf16 natively (AVX512-BF16 or AMX, about 1.5x faster than "
                                                      "fp32 there), off elsewhere (emulated bf16 made a step 17x "
                                                      "slower than fp32 on an AVX2 EPYC). The record holds the value "
                                                      "used.")
    save_steps: int = Field(default=25, ge=1, description="Checkpoint every this many steps (resume point).")
    keep_checkpoints: bool = Field(default=False, description="Keep every checkpoint (the points of topoeval sweep) "
                                                              "instead of the last two (resume points only).")
    threads: int | None = Field(default=None, ge=1, description="torch threads (default: torch's choice).")
    work_dir: Path | None = Field(default=None, description="Working folder (default ./runs/train/<name>).")
    out_dir: Path | None = Field(default=None, description="Where the GGUF adapter and its record go (default "
                                                           "./runs/adapters).")
    gguf: bool = Field(default=True, description="Convert the adapter to GGUF (needs llama.cpp's converter, see "
                                                 "lora_gguf).")
    fresh: bool = Field(default=False, description="Discard the working folder's checkpoints instead of resuming.")
    dry_run: bool = Field(default=False, description="Export and tokenize the data, report its size, train nothing.")


class TrainResult(BaseModel):
    """What a training run wrote."""

    name: str = Field(description="Model name of the adapter.")
    adapter_dir: Path = Field(description="The PEFT adapter folder.")
    gguf: Path | None = Field(default=None, description="The GGUF adapter (None when not converted).")
    record: dict[str, Any] = Field(description="The training record.")
    record_path: Path = Field(description="Where the record is written (<out_dir>/<name>.json).")


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def claim_work_dir(work: Path, identity: dict[str, Any], fresh: bool, **record: Any) -> None:
    """Make ``work`` this training's: its checkpoints resume only under the same ``identity`` (data and
    settings), are discarded with ``fresh``, and are refused in one line otherwise; the identity (and
    ``record``'s extra keys) is written to :data:`STATE_FILE`. SFT and GRPO share the rule."""
    state_path, checkpoints = work / STATE_FILE, work / "checkpoints"
    if checkpoints.exists():
        previous = json.loads(state_path.read_text()) if state_path.is_file() else {}
        if fresh:
            shutil.rmtree(checkpoints)
        elif previous.get("identity") != _hash(identity):
            raise UserError(f"{work} holds checkpoints of a different training (data or settings changed); "
                            "rerun with --fresh to discard them")
    state = {"identity": _hash(identity), **record, "config": identity}
    state_path.write_text(json.dumps(state, indent=1) + "\n")


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("topoeval", "torch", "transformers", "trl", "peft", "llama-cpp-python"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def training_data(cfg: TrainConfig, protocol: Any, work: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The conversations to train on (the oracle's export, cached in the working folder, plus ``cfg.data``)."""
    from topoeval.protocol.loader import protocol_hash
    from topoeval.runner.contamination import MANIFEST
    from topoeval.training.sft_data import PROMPT_FORMAT, RATIONALE_FORMAT, data_sha256, export_sft, read_sft

    folder = work / "data"
    manifest_path = folder / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    prompt_format = RATIONALE_FORMAT if cfg.rationale else PROMPT_FORMAT
    if (manifest.get("protocol_sha256") != protocol_hash(protocol) or manifest.get("n") != cfg.n
            or manifest.get("prompt_format") != prompt_format):
        manifest = export_sft(protocol, folder, split="train", n=cfg.n, rationale=cfg.rationale)
    rows = read_sft(folder)
    extra = {}
    for d in cfg.data:
        more = read_sft(d)
        extra[str(d)] = len(more)
        rows += more
    data = {"sha256": data_sha256(rows), "conversations": len(rows), "oracle_export": str(folder),
            "oracle_conversations": manifest["conversations"], "oracle_sources": manifest["sources"],
            "extra_exports": extra, "topology": manifest["topology"], "split": manifest["split"],
            "prompt_format": prompt_format}
    return rows, data


def tokenize(rows: list[dict[str, Any]], tokenizer: Any, max_length: int | None = None) -> dict[str, list]:
    """``input_ids`` and ``assistant_masks`` of each conversation under the tokenizer's chat template."""
    ids, masks = [], []
    for row in rows:
        out = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        i, m = list(out["input_ids"]), list(out["assistant_masks"])
        if max_length is not None:
            i, m = i[:max_length], m[:max_length]
        if not any(m):
            raise UserError(f"conversation {row['id']} has no assistant token to learn (max_length {max_length}?)")
        ids.append(i)
        masks.append(m)
    return {"input_ids": ids, "assistant_masks": masks}


def train(cfg: TrainConfig, command: str = "", callbacks: list | None = None) -> TrainResult:
    """Run the recipe (see the module docstring); resumes from the working folder's last checkpoint.
    ``callbacks``: transformers ``TrainerCallback`` objects for the trainer."""
    from topoeval.training.base_model import require_training_packages

    require_training_packages()
    from topoeval.protocol.loader import load_protocol, protocol_hash

    protocol = load_protocol(cfg.protocol)
    name = cfg.name or adapter_name(protocol.train_topology().name)
    work = Path(cfg.work_dir or RUNS / "train" / name)
    out_dir = Path(cfg.out_dir or ADAPTERS_OUT)
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    if cfg.bf16 is None:
        from topoeval.training.base_model import native_bf16

        cfg = cfg.model_copy(update={"bf16": native_bf16()})
    rows, data = training_data(cfg, protocol, work)
    if cfg.dry_run:
        return _dry_run(cfg, name, work, out_dir, rows, data)
    not_identity = {"work_dir", "out_dir", "gguf", "fresh", "threads", "save_steps", "keep_checkpoints", "dry_run"}
    identity = {"data": data["sha256"], **cfg.model_dump(mode="json", exclude=not_identity)}
    claim_work_dir(work, identity, cfg.fresh)

    return _fit(cfg, protocol, protocol_hash(protocol), name, work, out_dir, rows, data, command, started, callbacks)


def token_stats(tokens: dict[str, list]) -> dict[str, Any]:
    """Sizes of the tokenized conversations (what a step costs grows with them)."""
    lengths = sorted(map(len, tokens["input_ids"]))
    return {"conversations": len(lengths), "total": sum(lengths), "assistant": sum(map(sum, tokens["assistant_masks"])),
            "shortest": lengths[0], "median": lengths[len(lengths) // 2], "longest": lengths[-1]}


def _dry_run(cfg: TrainConfig, name: str, work: Path, out_dir: Path, rows: list[dict[str, Any]],
             data: dict[str, Any]) -> TrainResult:
    """The data a training would see, tokenized with the base's tokenizer and the training template."""
    from topoeval.models.llamacpp_template import chat_template
    from topoeval.training.base_model import load_tokenizer

    tokenizer = load_tokenizer(cfg.base)
    tokenizer.chat_template = chat_template()
    record = {"model": name, "dry_run": True, "data": data,
              "tokens": token_stats(tokenize(rows, tokenizer, cfg.max_length))}
    return TrainResult(name=name, adapter_dir=work / "adapter", record=record, record_path=out_dir / f"{name}.json")


def make_trainer(cfg: TrainConfig, model: Any, tokenizer: Any, rows: list[dict[str, Any]], output_dir: Path,
                 callbacks: list | None = None) -> tuple[Any, dict[str, list]]:
    """TRL's SFTTrainer over the tokenized conversations (labels only on assistant tokens), and the tokens."""
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    from topoeval.models.llamacpp_template import chat_template

    tokenizer.chat_template = chat_template()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokens = tokenize(rows, tokenizer, cfg.max_length)
    args = SFTConfig(
        output_dir=str(output_dir), num_train_epochs=cfg.epochs, max_steps=cfg.max_steps or -1,
        per_device_train_batch_size=cfg.batch_size, learning_rate=cfg.learning_rate, lr_scheduler_type="cosine",
        warmup_steps=0.03, logging_steps=1, save_strategy="steps", save_steps=cfg.save_steps,
        save_total_limit=None if cfg.keep_checkpoints else 2,
        seed=cfg.seed, data_seed=cfg.seed, use_cpu=True, bf16=cfg.bf16,
        # the dataset is tokenized here, with its assistant masks: TRL turns them into labels
        max_length=None, packing=False, assistant_only_loss=False, report_to="none", disable_tqdm=False,
        dataloader_num_workers=0,
    )
    peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, target_modules=TARGET_MODULES,
                             task_type="CAUSAL_LM")
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict(tokens), processing_class=tokenizer,
                         peft_config=peft_config, callbacks=callbacks)
    return trainer, tokens


def _fit(cfg: TrainConfig, protocol: Any, p_hash: str, name: str, work: Path, out_dir: Path,
         rows: list[dict[str, Any]], data: dict[str, Any], command: str, started: float,
         callbacks: list | None) -> TrainResult:
    import torch
    from transformers.trainer_utils import get_last_checkpoint

    from topoeval.training.base_model import load_base, write_base_config

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    t_load = time.perf_counter()
    base = load_base(cfg.base)
    load_s = time.perf_counter() - t_load
    base_config = write_base_config(base.model, work / "base")
    checkpoints = work / "checkpoints"
    trainer, tokens = make_trainer(cfg, base.model, base.tokenizer, rows, checkpoints, callbacks)
    resume = get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    t_train = time.perf_counter()
    if resume and _finished(trainer, resume):
        train_loss = _restore(trainer, resume)  # transformers would take one more step past the end
    else:
        train_loss = trainer.train(resume_from_checkpoint=resume).training_loss
    train_s = time.perf_counter() - t_train
    adapter_dir = work / "adapter"
    trainer.save_model(str(adapter_dir))

    gguf_path = agreement = None
    if cfg.gguf:
        from topoeval.training.lora_gguf import convert_adapter

        gguf_path = convert_adapter(adapter_dir, base_config, out_dir / f"{name}.gguf")
        if Path(base.source).suffix == ".gguf":  # the embedded base: check the conversion in llama.cpp
            from topoeval.training.lora_gguf import gguf_agreement

            agreement = gguf_agreement(trainer.model, tokens["input_ids"][0], base.source, gguf_path)
    curve = [{"step": h["step"], "loss": round(float(h["loss"]), 5)} for h in trainer.state.log_history if "loss" in h]
    record = {
        "model": name,
        "base": {"source": "embedded" if cfg.base == "embedded" else cfg.base, "file": Path(base.source).name,
                 "sha256": _file_sha256(base.source) if Path(base.source).is_file() else None},
        "protocol": protocol.name, "protocol_sha256": p_hash, "train_topology": protocol.train_topology().name,
        "data": data,
        "command": command or f"topoeval train {cfg.protocol}",
        "config": cfg.model_dump(mode="json", exclude={"work_dir", "out_dir", "fresh"}),
        "seed": cfg.seed,
        "steps": trainer.state.global_step,
        "epochs": round(float(trainer.state.epoch or 0), 4),
        "tokens": token_stats(tokens),
        "resumed_from": Path(resume).name if resume else None,
        "checkpoints": {"every": cfg.save_steps, "folder": str(checkpoints),
                        "kept": "all" if cfg.keep_checkpoints else "last 2"},
        "loss_curve": curve,
        "final_loss": curve[-1]["loss"] if curve else None,
        "train_loss": round(float(train_loss), 5),
        "seconds": {"load_base": round(load_s, 1), "train": round(train_s, 1),
                    "total": round(time.perf_counter() - started, 1)},
        "torch_threads": torch.get_num_threads(),
        "adapter_gguf": {"file": gguf_path.name, "bytes": gguf_path.stat().st_size,
                         "sha256": _file_sha256(gguf_path), "agreement": agreement} if gguf_path else None,
        "versions": _versions(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    record_path = out_dir / f"{name}.json"
    record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return TrainResult(name=name, adapter_dir=adapter_dir, gguf=gguf_path, record=record, record_path=record_path)


def _finished(trainer: Any, checkpoint: str) -> bool:
    """Whether ``checkpoint`` is the last step of the planned training."""
    from transformers import TrainerState

    args = trainer.args
    per_epoch = max(1, len(trainer.get_train_dataloader()) // args.gradient_accumulation_steps)
    planned = args.max_steps if args.max_steps > 0 else math.ceil(args.num_train_epochs * per_epoch)
    return TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json")).global_step >= planned


def _restore(trainer: Any, checkpoint: str) -> float:
    """Load a finished training's adapter weights and state from its last checkpoint; its mean loss."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file
    from transformers import TrainerState

    set_peft_model_state_dict(trainer.model, load_file(str(Path(checkpoint) / "adapter_model.safetensors")))
    trainer.state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return sum(losses) / len(losses) if losses else float("nan")


def _file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
