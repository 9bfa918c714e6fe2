"""GRPO on a protocol's train topology: TRL's ``GRPOTrainer`` driving topoeval's own environment.

``topoeval train PROTOCOL --method grpo`` (``make train METHOD=grpo``):

1. the dataset is ``n`` task indices of the train topology's train split (the protocol's train
   seed); TRL draws ``prompts_per_step`` of them a step and repeats each ``num_generations`` times
   (one group);
2. each rollout is a whole multi-turn episode in :class:`~topoeval.training.env.TopologyEnv`
   (:mod:`topoeval.training.grpo_rollout`: TRL's ``rollout_func``), the policy writing in the
   ``topoeval-tools`` layout it is evaluated in; the reward is the env's score of the finished
   episode — ``success`` by default, or ``dq`` / a weighted mix (``--reward success=0.8,dq=0.2``,
   :func:`topoeval.reward`'s ``metric``);
3. the policy is a LoRA (r 16 on every projection) on the embedded SmolLM2-135M, initialised from
   the shipped SFT adapter of the train topology (``--init sft``: SFT then RL, the usual pipeline;
   the KL reference is then that SFT policy) or fresh on the base (``--init base``; the reference is
   the base), or from any GGUF LoRA file (``--init PATH.gguf``);
4. a checkpoint every ``save_steps`` steps, all kept (``topoeval sweep`` evaluates them); the same
   command resumes from the last one, and a finished run is not trained again;
5. the adapter goes to ``<out_dir>/<name>.gguf`` (default name ``smollm2-135m-<topology>-grpo``)
   with its training record (``.json``): settings, data (the task set's hash), seed, steps, the
   per-step diagnostics (:mod:`topoeval.training.diagnostics`), time, versions; and a PNG of the
   diagnostics beside it.
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from topoeval.core.errors import UserError
from topoeval.models.adapters import adapter_name, grpo_adapter_name, prompt_format
from topoeval.models.llamacpp_tools import RATIONALE_FORMAT
from topoeval.training.sft import (
    ADAPTERS_OUT,
    RUNS,
    TARGET_MODULES,
    TrainResult,
    _file_sha256,
    _hash,
    _versions,
    claim_work_dir,
)


class GrpoConfig(BaseModel):
    """What ``topoeval train --method grpo`` trains, and how (docs/training.md has the shipped run's values and why)."""

    model_config = ConfigDict(extra="forbid")

    protocol: str = Field(description="Protocol name or YAML path; its train topology's train split is trained on.")
    name: str | None = Field(default=None, description="Model name of the adapter (default smollm2-135m-<train "
                                                       "topology>-grpo).")
    init: str = Field(default="sft", description="'sft' (the shipped SFT adapter of the train topology), 'base' (a "
                                                 "fresh LoRA), or a GGUF LoRA file.")
    n: int = Field(default=200, ge=1, description="Train-split tasks in the prompt pool (indices 0..n-1).")
    max_steps: int = Field(default=40, ge=1, description="Optimizer steps.")
    num_generations: int = Field(default=8, ge=2, description="Rollouts per task (the GRPO group size).")
    prompts_per_step: int = Field(default=2, ge=1, description="Tasks per step (rollouts per step = this x "
                                                               "num_generations).")
    beta: float = Field(default=0.04, ge=0, description="KL coefficient to the reference (the init policy).")
    temperature: float = Field(default=1.0, ge=0, description="Sampling temperature of the rollouts.")
    top_p: float = Field(default=1.0, gt=0, le=1, description="Nucleus sampling of the rollouts.")
    learning_rate: float = Field(default=5e-5, gt=0, description="Learning rate (constant).")
    reward: str | dict[str, float] = Field(default="success", description="Episode metric (or weights of metrics) the "
                                                                          "reward is.")
    max_turns: int = Field(default=6, ge=1, description="Turns per rollout episode.")
    max_tool_calls: int = Field(default=12, ge=1, description="Tool calls per rollout episode.")
    turn_tokens: int = Field(default=64, ge=1, description="Tokens the policy may write per turn.")
    max_completion_tokens: int = Field(default=256, ge=1, description="Tokens the policy may write per episode (then "
                                                                      "it is scored as it stands).")
    lora_r: int = Field(default=16, ge=1, description="LoRA rank (must be the init adapter's with --init sft).")
    lora_alpha: int = Field(default=32, ge=1, description="LoRA alpha.")
    seed: int = Field(default=0, description="Seed of the task order, the sampling and a fresh LoRA.")
    base: str = Field(default="embedded", description="'embedded' (the SmolLM2-135M GGUF) or a transformers checkpoint "
                                                      "folder.")
    save_steps: int = Field(default=8, ge=1, description="Checkpoint every this many steps (resume points and sweep "
                                                         "points).")
    threads: int | None = Field(default=None, ge=1, description="torch threads (default: torch's choice).")
    work_dir: Path | None = Field(default=None, description="Working folder (default ./runs/train/<name>).")
    out_dir: Path | None = Field(default=None, description="Where the GGUF adapter, its record and plot go (default "
                                                           "./runs/adapters).")
    gguf: bool = Field(default=True, description="Convert the adapter to GGUF (needs llama.cpp's converter).")
    fresh: bool = Field(default=False, description="Discard the working folder's checkpoints instead of resuming.")
    progress: bool = Field(default=True, description="Show TRL's progress bar.")


#: episodes per forward/backward pass of the policy update (bounds the memory of the logits)
MICRO_BATCH = 2
#: settings that do not change what is trained (left out of the resume identity)
_NOT_IDENTITY = {"work_dir", "out_dir", "gguf", "fresh", "threads", "save_steps", "progress"}


def _init_adapter(cfg: GrpoConfig, topology: str) -> Path | None:
    """The GGUF LoRA the policy starts from (None: a fresh LoRA)."""
    if cfg.init == "base":
        return None
    if cfg.init == "sft":
        from topoeval.models.adapters import adapter_path

        return Path(adapter_path(adapter_name(topology)))
    path = Path(cfg.init)
    if path.suffix != ".gguf" or not path.is_file():
        raise UserError(f"--init {cfg.init}: neither 'sft', 'base' nor a GGUF LoRA file")
    return path


def prompt_rows(n: int) -> list[dict[str, Any]]:
    """The dataset: one conversational prompt per task index (the rollout reads ``task_index``)."""
    return [{"prompt": [{"role": "user", "content": f"train task {i}", "task_index": i}]} for i in range(n)]


def episode_reward(prompts: Any = None, completions: Any = None, episode_reward: list | None = None,
                   **_: Any) -> list[float | None]:
    """TRL reward function: the env's score of each finished episode (computed in the rollout)."""
    return list(episode_reward or [])


def train_grpo(cfg: GrpoConfig, command: str = "", callbacks: list | None = None) -> TrainResult:
    """Run the recipe (see the module docstring); resumes from the working folder's last checkpoint."""
    from topoeval.training.base_model import require_training_packages

    require_training_packages()
    from topoeval.protocol.loader import load_protocol, protocol_hash
    from topoeval.protocol.topology import topology_from

    protocol = load_protocol(cfg.protocol)
    topo_name = protocol.train_topology().name
    name = cfg.name or grpo_adapter_name(topo_name)
    work = Path(cfg.work_dir or RUNS / "train" / name)
    out_dir = Path(cfg.out_dir or ADAPTERS_OUT)
    init = _init_adapter(cfg, topo_name)
    topology = topology_from(topo_name, protocol)
    split = protocol.tasks.train
    if split is None:
        raise UserError(f"protocol '{protocol.name}' sets no tasks.train: GRPO draws its prompts from the train split")
    task_ids = [topology.suite.generate(topology.params, "train", split.seed, i).id for i in range(min(cfg.n, split.n))]
    data = {"topology": topo_name, "split": "train", "seed": split.seed, "tasks": len(task_ids),
            "sha256": _hash(task_ids), "init_sha256": _file_sha256(init) if init else None}
    if init is not None and prompt_format(init) == RATIONALE_FORMAT:  # rollouts in the layout the init learned
        data["prompt_format"] = RATIONALE_FORMAT
    identity = {"data": data, **cfg.model_dump(mode="json", exclude=_NOT_IDENTITY)}
    work.mkdir(parents=True, exist_ok=True)
    claim_work_dir(work, identity, cfg.fresh, method="grpo")
    started = time.perf_counter()
    return _fit(cfg, protocol, protocol_hash(protocol), topology, name, init, work, out_dir, data, command, started,
                callbacks)


def _policy(cfg: GrpoConfig, base: Any, init: Path | None) -> tuple[Any, Any]:
    """(model, peft_config) for the trainer: a PEFT model carrying the init adapter, or the base and a fresh LoRA."""
    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, target_modules=TARGET_MODULES,
                      task_type="CAUSAL_LM")
    if init is None:
        return base.model, lora
    from topoeval.training.lora_import import gguf_lora, load_into_peft

    _, alpha, rank = gguf_lora(init)
    if rank != cfg.lora_r or int(alpha) != cfg.lora_alpha:
        raise UserError(f"--init {init.name}: rank {rank} / alpha {alpha:g}, "
                        f"but --lora-r {cfg.lora_r} / alpha {cfg.lora_alpha}")
    model = get_peft_model(base.model, lora)
    load_into_peft(model, init)
    return model, None  # TRL copies the loaded adapter as the frozen KL reference ("ref")


def make_trainer(cfg: GrpoConfig, model: Any, peft_config: Any, tokenizer: Any, rollouts: Any, output_dir: Path,
                 callbacks: list | None = None) -> Any:
    """TRL's GRPOTrainer over the task-index prompts, generating with ``rollouts``."""
    import os

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    # all of a step's rollouts are generated together (one padded batch per turn); the loss, the
    # reference's and the entropy's forward passes take MICRO_BATCH episodes at a time (gradient
    # accumulation): a pass over 8 episodes of ~1,000 tokens holds 8 x 1,000 x 49k-vocabulary logits
    # and their softmaxes, which peaked at 15.8 GB resident (measured, docs/training.md)
    rollouts_per_step = cfg.prompts_per_step * cfg.num_generations
    micro = MICRO_BATCH if rollouts_per_step % MICRO_BATCH == 0 else 1
    args = GRPOConfig(
        output_dir=str(output_dir), max_steps=cfg.max_steps, per_device_train_batch_size=micro,
        gradient_accumulation_steps=rollouts_per_step // micro, steps_per_generation=rollouts_per_step // micro,
        num_generations=cfg.num_generations, learning_rate=cfg.learning_rate,
        lr_scheduler_type="constant", warmup_steps=0, beta=cfg.beta, temperature=max(cfg.temperature, 1e-3),
        top_p=cfg.top_p, max_completion_length=cfg.max_completion_tokens, logging_steps=1, save_strategy="steps",
        save_steps=cfg.save_steps, save_total_limit=None, seed=cfg.seed, data_seed=cfg.seed, use_cpu=True,
        bf16=False, report_to="none", disable_tqdm=not cfg.progress, dataloader_num_workers=0,
        gradient_checkpointing=False, log_completions=False, remove_unused_columns=False,
    )
    return GRPOTrainer(model=model, reward_funcs=[episode_reward], args=args,
                       train_dataset=Dataset.from_list(prompt_rows(cfg.n)), processing_class=tokenizer,
                       peft_config=peft_config, rollout_func=rollouts, callbacks=callbacks)


def _fit(cfg: GrpoConfig, protocol: Any, p_hash: str, topology: Any, name: str, init: Path | None, work: Path,
         out_dir: Path, data: dict[str, Any], command: str, started: float, callbacks: list | None) -> TrainResult:
    import torch
    from transformers import TrainerState
    from transformers.trainer_utils import get_last_checkpoint

    from topoeval.training.base_model import load_base, write_base_config
    from topoeval.training.diagnostics import grpo_curve, plot_diagnostics
    from topoeval.training.grpo_rollout import Rollouts

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    t_load = time.perf_counter()
    base = load_base(cfg.base)
    load_s = time.perf_counter() - t_load
    base_config = write_base_config(base.model, work / "base")
    model, peft_config = _policy(cfg, base, init)
    rollouts = Rollouts(topology, task_seed=protocol.tasks.train.seed, n_tasks=protocol.tasks.train.n,
                        max_turns=cfg.max_turns, max_tool_calls=cfg.max_tool_calls, turn_tokens=cfg.turn_tokens,
                        max_completion_tokens=cfg.max_completion_tokens, temperature=cfg.temperature,
                        top_p=cfg.top_p, reward=cfg.reward,
                        text_then_calls=data.get("prompt_format") == RATIONALE_FORMAT)
    checkpoints = work / "checkpoints"
    trainer = make_trainer(cfg, model, peft_config, base.tokenizer, rollouts, checkpoints, callbacks)
    resume = get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    t_train = time.perf_counter()
    if resume and TrainerState.load_from_json(str(Path(resume) / "trainer_state.json")).global_step >= cfg.max_steps:
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        set_peft_model_state_dict(trainer.model, load_file(str(Path(resume) / "adapter_model.safetensors")))
        trainer.state = TrainerState.load_from_json(str(Path(resume) / "trainer_state.json"))
    else:
        trainer.train(resume_from_checkpoint=resume)
    train_s = time.perf_counter() - t_train
    adapter_dir = work / "adapter"
    trainer.save_model(str(adapter_dir))
    for extra in ("ref",):  # the frozen KL reference adapter is not part of the result
        shutil.rmtree(adapter_dir / extra, ignore_errors=True)

    gguf_path = None
    if cfg.gguf:
        from topoeval.training.lora_gguf import convert_adapter

        gguf_path = convert_adapter(adapter_dir, base_config, out_dir / f"{name}.gguf")
    curve = grpo_curve(trainer.state.log_history)
    steps = trainer.state.global_step
    record = {
        "model": name, "method": "grpo",
        "base": {"source": "embedded" if cfg.base == "embedded" else cfg.base, "file": Path(base.source).name,
                 "sha256": _file_sha256(base.source) if Path(base.source).is_file() else None},
        "init": {"kind": cfg.init if cfg.init in ("sft", "base") else "file", "file": init.name if init else None,
                 "sha256": data["init_sha256"]},
        "protocol": protocol.name, "protocol_sha256": p_hash, "train_topology": topology.name,
        "data": data, "reward": cfg.reward,
        "command": command or f"topoeval train {cfg.protocol} --method grpo",
        "config": cfg.model_dump(mode="json", exclude={"work_dir", "out_dir", "fresh", "progress"}),
        "seed": cfg.seed, "steps": steps,
        "rollouts_per_step": cfg.prompts_per_step * cfg.num_generations,
        "checkpoints": {"every": cfg.save_steps, "folder": str(checkpoints),
                        "steps": sorted(int(p.name.split("-")[1]) for p in checkpoints.glob("checkpoint-*"))},
        "resumed_from": Path(resume).name if resume else None,
        "diagnostics": curve,
        "seconds": {"load_base": round(load_s, 1), "train": round(train_s, 1),
                    "per_step": round(train_s / max(1, steps - _step_of(resume)), 1),
                    "total": round(time.perf_counter() - started, 1)},
        "torch_threads": torch.get_num_threads(),
        "max_rss_mb": _max_rss_mb(),
        "adapter_gguf": {"file": gguf_path.name, "bytes": gguf_path.stat().st_size,
                         "sha256": _file_sha256(gguf_path)} if gguf_path else None,
        "versions": _versions(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    record_path = out_dir / f"{name}.json"
    if curve:
        record["plot"] = plot_diagnostics(curve, out_dir / f"{name}.png", title=f"{name}: GRPO on {topology.name}").name
    record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return TrainResult(name=name, adapter_dir=adapter_dir, gguf=gguf_path, record=record, record_path=record_path)


def _max_rss_mb() -> int | None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _step_of(checkpoint: str | None) -> int:
    return int(Path(checkpoint).name.split("-")[1]) if checkpoint else 0


