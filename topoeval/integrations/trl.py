"""Transfer over training, live: a transformers ``TrainerCallback`` for TRL's trainers and any HF Trainer.

::

    from topoeval.integrations.trl import TransferCallback

    trainer = SFTTrainer(..., callbacks=[TransferCallback("wiki_to_travel", tasks=8, out="runs/transfer")])

At each save (or every ``every`` steps) it evaluates the current weights on the protocol's ID and OOD
topologies (and ladder): the checkpoint the trainer just wrote (``<output_dir>/checkpoint-<step>``),
or with ``every`` the weights it saves itself (``<out>/checkpoints/checkpoint-<step>``). A PEFT LoRA
of the embedded SmolLM2-135M (or of a ``base_gguf``) goes through topoeval's llama-server (LoRA →
GGUF, on the CPU); any other model through a ``serve`` template (:mod:`topoeval.models.managed_server`,
e.g. vLLM). Each point is appended to the sweep folder ``out`` (:func:`topoeval.api.run_sweep`: one
resumable run, ``summary.json``, ``sweep.png``, ``report.md``), so ``topoeval report OUT/run`` and the
sweep's report show the curve so far — the same numbers ``topoeval sweep PROTOCOL --checkpoints
<output_dir>`` gives for the same checkpoints.

The values are logged into the trainer's log history as ``topoeval/<topology>/<metric>`` (success
and dq), and handed to the trainer's other callbacks' ``on_log`` the way ``Trainer.log`` does, so
wandb or tensorboard draw them beside the loss. transformers gives a callback no handle on its
trainer: it is found once, through the callback list that holds this callback (or pass
``trainer=``).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError

try:
    from transformers import TrainerCallback
    from transformers.trainer_callback import CallbackHandler
except ImportError:  # pragma: no cover - depends on the environment
    raise UserError("topoeval.integrations.trl needs transformers: pip install 'topoeval[train]'") from None

PREFIX = "topoeval"


class TransferCallback(TrainerCallback):
    """Evaluate the weights at each save (or every ``every`` steps) on ``protocol``; log and append the point."""

    def __init__(self, protocol: str | Path, tasks: int | None = None, every: int | None = None,
                 out: str | Path | None = None, serve: str | None = None, base_gguf: str | None = None,
                 base: str | None = None, shots: int = 0, trainer: Any = None, **settings: Any):
        """``tasks``: test tasks per topology; ``every``: evaluate every this many steps instead of at each save;
        ``out``: the sweep folder (default ./results/<protocol>/sweep-live); ``serve``: a server command template
        for models without a GGUF path; ``base_gguf``: the GGUF of a LoRA's base (default: the embedded model);
        ``base``: a model spec evaluated as step 0; ``shots``: the baseline; ``settings``: more of
        :func:`topoeval.run_protocol`'s (``max_turns``, ``max_tokens``, ``model_options``...)."""
        if every is not None and every < 1:
            raise UserError(f"TransferCallback every={every}: give 1 or more (or None: at each save)")
        self.protocol, self.every, self.serve, self.base_gguf = protocol, every, serve, base_gguf
        self.out = Path(out or Path("results") / Path(str(protocol)).stem / "sweep-live")
        self.shots = shots
        self.settings = {**settings, **({"tasks": tasks} if tasks is not None else {}), "progress": False}
        self.trainer = trainer
        self.points: list = []
        if base is not None:
            from topoeval.analysis.sweep import SweepPoint

            self.points.append(SweepPoint(step=0, model=base))
        #: what each evaluation logged, by step
        self.logged: dict[int, dict[str, float]] = {}
        self.sweep: dict[str, Any] | None = None

    # -- transformers events ------------------------------------------------------------------------------

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.every is None or state.global_step % self.every or not state.is_world_process_zero:
            return control
        folder = self.out / "checkpoints" / f"checkpoint-{state.global_step}"
        if model is None:
            raise UserError("TransferCallback: the trainer passed no model to save")
        model.save_pretrained(str(folder))
        self._evaluate(folder, args, state, control)
        return control

    def on_save(self, args, state, control, **kwargs):
        if self.every is not None or not state.is_world_process_zero:
            return control
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if not folder.is_dir():
            raise UserError(f"TransferCallback: the trainer saved no {folder}")
        self._evaluate(folder, args, state, control)
        return control

    # -- the evaluation -----------------------------------------------------------------------------------

    def _evaluate(self, folder: Path, args: Any, state: Any, control: Any) -> None:
        from topoeval.api import run_sweep
        from topoeval.training.checkpoint_dirs import Checkpoint, checkpoint_points, weights_of

        step = state.global_step
        weights, lora = weights_of(folder)
        ckpt = Checkpoint(step=step, folder=folder, weights=weights, lora=lora)
        self.points = [p for p in self.points if p.step != step]
        self.points += checkpoint_points([ckpt], self.out / "adapters", serve=self.serve, base_gguf=self.base_gguf)
        self.sweep = run_sweep(self.protocol, self.points, self.out, baseline=self.shots,
                               training={"checkpoints": str(folder.parent), "every": self.every or args.save_steps},
                               **self.settings)
        logs = point_metrics(self.sweep, step)
        self.logged[step] = logs
        self._log(logs, args, state, control)

    def _log(self, logs: dict[str, float], args: Any, state: Any, control: Any) -> None:
        """What ``Trainer.log`` does: the entry in the log history, then every callback's ``on_log``."""
        trainer = self.trainer
        if trainer is not None and hasattr(trainer, "log"):
            trainer.log(dict(logs))
            return
        state.log_history.append({**logs, "step": state.global_step})
        handler = self._handler()
        if handler is not None:
            handler.on_log(args, state, control, dict(logs))

    def _handler(self) -> CallbackHandler | None:
        """The trainer's callback handler: the owner of the list that holds this callback."""
        for ref in gc.get_referrers(self):
            if not isinstance(ref, list):
                continue
            for owner in gc.get_referrers(ref):
                if isinstance(owner, CallbackHandler) and owner.callbacks is ref:
                    return owner
                if isinstance(owner, dict) and owner.get("callbacks") is ref:
                    for obj in gc.get_referrers(owner):
                        if isinstance(obj, CallbackHandler):
                            return obj
        return None


def point_metrics(sweep: dict[str, Any], step: int) -> dict[str, float]:
    """``topoeval/<topology>/<metric>`` of one step of a sweep summary (the metrics with a mean)."""
    out = {}
    for curve in sweep["curves"]:
        for metric in ("success", "dq"):
            for p in curve[metric]:
                if p["step"] == step and p["mean"] is not None:
                    out[f"{PREFIX}/{curve['topology']}/{metric}"] = p["mean"]
    return out
