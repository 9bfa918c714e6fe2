"""``topoeval train``: SFT on oracle conversations, or GRPO in topoeval's environment (docs/training.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from topoeval.core.errors import UserError


def _reward(text: str) -> str | dict[str, float]:
    """``success`` / ``dq`` or weights ``success=0.8,dq=0.2``."""
    if "=" not in text:
        return text
    try:
        return {k.strip(): float(v) for k, v in (part.split("=", 1) for part in text.split(","))}
    except ValueError:
        raise UserError(f"--reward {text}: a metric name or weights like success=0.8,dq=0.2") from None


def train(
    protocol: Annotated[str, typer.Argument(help="Protocol name or YAML path: its train topology is trained on.")],
    method: Annotated[str, typer.Option(help="sft (oracle conversations) or grpo (RL in topoeval's "
                                             "environment).")] = "sft",
    n: Annotated[int | None, typer.Option("--tasks", min=1, help="Train-split tasks (sft: the oracle's conversations, "
                                                                 "default 300; grpo: the prompt pool, default "
                                                                 "200).")] = None,
    epochs: Annotated[float, typer.Option(min=0.01, help="sft: passes over the conversations.")] = 2.0,
    max_steps: Annotated[int | None, typer.Option(min=1, help="Stop after this many steps (sft: overrides --epochs; "
                                                              "grpo: default 40).")] = None,
    data: Annotated[list[Path] | None, typer.Option(help="sft: more `topoeval export --format sft` folders "
                                                         "(repeatable).")] = None,
    rationale: Annotated[bool, typer.Option("--rationale", help="sft: the oracle's turns carry the suite's line of "
                                                                "reasoning before their calls (travel: the chosen "
                                                                "flight, field by field); the adapter then writes "
                                                                "one too.")] = False,
    learning_rate: Annotated[float | None, typer.Option(min=0.0, help="Learning rate (sft 2e-4 peak, grpo "
                                                                      "5e-5).")] = None,
    init: Annotated[str, typer.Option(help="grpo: start from 'sft' (the shipped SFT adapter), 'base', or a GGUF LoRA "
                                           "file.")] = "sft",
    num_generations: Annotated[int, typer.Option(min=2, help="grpo: rollouts per task (group size).")] = 8,
    prompts_per_step: Annotated[int, typer.Option(min=1, help="grpo: tasks per step.")] = 2,
    beta: Annotated[float, typer.Option(min=0.0, help="grpo: KL coefficient to the init policy.")] = 0.04,
    temperature: Annotated[float, typer.Option(min=0.0, help="grpo: rollout sampling temperature.")] = 1.0,
    reward: Annotated[str, typer.Option(help="grpo: reward metric, or weights like success=0.8,dq=0.2.")] = "success",
    max_turns: Annotated[int, typer.Option(min=1, help="grpo: turns per rollout episode.")] = 6,
    turn_tokens: Annotated[int, typer.Option(min=1, help="grpo: tokens per turn.")] = 64,
    max_completion_tokens: Annotated[int, typer.Option(min=1, help="grpo: model tokens per rollout episode.")] = 256,
    seed: Annotated[int, typer.Option(help="Seed of the adapter's initialisation, the data order and (grpo) "
                                           "sampling.")] = 0,
    name: Annotated[str | None, typer.Option(help="Adapter model name (default smollm2-135m-<train "
                                                  "topology>[-grpo]).")] = None,
    base: Annotated[str, typer.Option(help="'embedded' or a transformers checkpoint folder.")] = "embedded",
    save_steps: Annotated[int | None, typer.Option(min=1, help="Checkpoint every this many steps (sft 25, grpo "
                                                               "8).")] = None,
    threads: Annotated[int | None, typer.Option(min=1, help="torch threads.")] = None,
    bf16: Annotated[bool | None, typer.Option("--bf16/--no-bf16", help="sft: bf16 autocast (default: where the CPU "
                                                                      "has native bf16, AVX512-BF16 or AMX).")] = None,
    out_dir: Annotated[Path | None, typer.Option(help="Where the GGUF adapter and its record go (default "
                                                      "./runs/adapters; make train: adapters/).")] = None,
    work_dir: Annotated[Path | None, typer.Option(help="Working folder (default ./runs/train/<name>).")] = None,
    keep_checkpoints: Annotated[bool, typer.Option(help="sft: keep every checkpoint (for topoeval sweep), not only "
                                                        "the last two (grpo keeps all).")] = False,
    fresh: Annotated[bool, typer.Option(help="Discard earlier checkpoints instead of resuming.")] = False,
    dry_run: Annotated[bool, typer.Option(help="sft: export and tokenize the data, print its size, train "
                                               "nothing.")] = False,
    transfer_every: Annotated[int | None, typer.Option(min=1, help="Evaluate the weights on the protocol's ID and OOD "
                                                                   "topologies every this many steps while training "
                                                                   "(topoeval.integrations.trl.TransferCallback).")
                              ] = None,
    transfer_tasks: Annotated[int, typer.Option(min=1, help="--transfer-every: test tasks per topology.")] = 4,
    transfer_max_turns: Annotated[int | None, typer.Option(min=1, help="--transfer-every: turn limit.")] = None,
    transfer_max_tokens: Annotated[int | None, typer.Option(min=1, help="--transfer-every: tokens per turn.")] = None,
    transfer_out: Annotated[Path | None, typer.Option(help="--transfer-every: the sweep folder (default "
                                                           "<work dir>/transfer).")] = None,
) -> None:
    """Fine-tune the embedded model with LoRA on the protocol's train topology (CPU) and write a GGUF adapter:
    SFT on the oracle's conversations, or GRPO with topoeval's environment and reward (--method grpo). The same
    command resumes an interrupted run (needs the 'train' extra; docs/training.md)."""
    command = "topoeval " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["train"] else f"topoeval train {protocol}"
    callbacks = None
    if transfer_every is not None:
        if dry_run:
            raise UserError("--transfer-every evaluates while training; --dry-run trains nothing")
        from topoeval.integrations.trl import TransferCallback

        work = work_dir or Path("runs") / "train" / (name or _default_name(protocol, method))
        folder = transfer_out or work / "transfer"
        limits: dict[str, Any] = {k: v for k, v in (("max_turns", transfer_max_turns),
                                                    ("max_tokens", transfer_max_tokens)) if v}
        callbacks = [TransferCallback(protocol, tasks=transfer_tasks, every=transfer_every, out=folder,
                                      base="smollm2-135m" if base == "embedded" and method == "sft" else None,
                                      **limits)]
    if method == "grpo":
        if rationale:
            raise UserError("--rationale shapes SFT data; GRPO takes the layout of the adapter it starts from (--init)")
        return _grpo(protocol, command, n=n, max_steps=max_steps, learning_rate=learning_rate, init=init,
                     num_generations=num_generations, prompts_per_step=prompts_per_step, beta=beta,
                     temperature=temperature, reward=_reward(reward), max_turns=max_turns, turn_tokens=turn_tokens,
                     max_completion_tokens=max_completion_tokens, seed=seed, name=name, base=base,
                     save_steps=save_steps, threads=threads, out_dir=out_dir, work_dir=work_dir, fresh=fresh,
                     callbacks=callbacks)
    if method != "sft":
        raise UserError(f"--method must be sft or grpo, not '{method}'")
    from topoeval.training.sft import TrainConfig
    from topoeval.training.sft import train as run_training

    cfg = TrainConfig(protocol=protocol, n=n or 300, epochs=epochs, max_steps=max_steps,
                      data=[str(d) for d in data or ()], rationale=rationale, learning_rate=learning_rate or 2e-4,
                      seed=seed, name=name,
                      base=base, save_steps=save_steps or 25, keep_checkpoints=keep_checkpoints, threads=threads,
                      out_dir=out_dir, work_dir=work_dir, fresh=fresh, dry_run=dry_run, bf16=bf16)
    result = run_training(cfg, command, callbacks)
    rec = result.record
    if dry_run:
        t = rec["tokens"]
        typer.echo(f"{result.name}: {t['conversations']} conversations (data sha256 {rec['data']['sha256'][:12]}); "
                   f"tokens per conversation {t['shortest']}..{t['longest']} (median {t['median']}), "
                   f"{t['total']} in all, "
                   f"{t['assistant']} of them learned (assistant turns)")
        return
    first = rec["loss_curve"][0]["loss"] if rec["loss_curve"] else None
    typer.echo(f"{result.name}: {rec['steps']} steps, loss {first} -> {rec['final_loss']}, {rec['seconds']['train']} s "
               f"training; wrote {result.gguf or result.adapter_dir} and {result.record_path}")


def _default_name(protocol: str, method: str) -> str:
    """The adapter name topoeval train gives (smollm2-135m-<train topology>[-grpo])."""
    from topoeval.models.adapters import adapter_name, grpo_adapter_name
    from topoeval.protocol.loader import load_protocol

    train = load_protocol(protocol).train
    if train is None:
        raise UserError(f"{protocol}: names no train topology")
    return grpo_adapter_name(train.name) if method == "grpo" else adapter_name(train.name)


def _grpo(protocol: str, command: str, callbacks: list | None = None, **opts) -> None:
    from topoeval.training.diagnostics import summary
    from topoeval.training.grpo import GrpoConfig, train_grpo

    defaults = {"n": 200, "max_steps": 40, "learning_rate": 5e-5, "save_steps": 8}
    opts = {k: (defaults[k] if v is None and k in defaults else v) for k, v in opts.items()}
    result = train_grpo(GrpoConfig(protocol=protocol, **opts), command, callbacks)
    rec, s = result.record, summary(result.record["diagnostics"])
    typer.echo(f"{result.name}: {rec['steps']} GRPO steps, reward {s.get('reward_first')} -> {s.get('reward_last')}, "
               f"zero-std group share {s.get('zero_std_share')}, {rec['seconds']['per_step']} s a step; wrote "
               f"{result.gguf or result.adapter_dir} and {result.record_path}")


def report_training(path: Path) -> None:
    """``topoeval report`` of a GRPO training run (its record, or the folder holding it): the diagnostics."""
    from topoeval.training.diagnostics import diagnostics_table, find_training_record, summary, training_report

    record = find_training_record(path)
    if record is None:
        raise UserError(f"{path}: neither a run folder (summary.json) nor a GRPO training record")
    out = Path(record.pop("_path")).parent
    written = training_report(record, out)
    curve = record["diagnostics"]
    typer.echo(diagnostics_table(curve, every=max(1, len(curve) // 20)))
    s = summary(curve)
    typer.echo(f"reward {s.get('reward_first')} -> {s.get('reward_last')}, "
               f"zero-std group share {s.get('zero_std_share')}, last KL {s.get('kl_last')}; wrote "
               + ", ".join(p.name for p in written))
