"""topoeval.integrations.trl.TransferCallback: transfer evaluated live inside a TRL trainer, logged into the
trainer's history (and every callback's on_log), the same numbers as `topoeval sweep --checkpoints` of the
same checkpoints."""

import json
import subprocess

import pytest

from topoeval.core.errors import UserError


def test_every_must_be_positive():
    pytest.importorskip("transformers")
    from topoeval.integrations.trl import TransferCallback, point_metrics

    with pytest.raises(UserError, match="every=0"):
        TransferCallback("wiki_to_travel", every=0)
    sweep = {"curves": [{"topology": "wiki", "success": [{"step": 2, "mean": 0.5}], "dq": [{"step": 2, "mean": None}]}]}
    assert point_metrics(sweep, 2) == {"topoeval/wiki/success": 0.5} and point_metrics(sweep, 3) == {}


@pytest.mark.local_model
@pytest.mark.slow
def test_the_callback_logs_what_a_sweep_of_the_same_checkpoints_gives(tmp_path, topoeval_cmd):
    """The embedded model trained 4 SFT steps with a checkpoint every 2: the callback evaluates
    checkpoint-2 and checkpoint-4 as they are saved (4 oracle conversations, untruncated: the tools alone pass 256 tokens); a sweep of the same folder afterwards gives the same means."""
    pytest.importorskip("trl", reason="training is an optional extra (topoeval[train])")
    from transformers import TrainerCallback

    from topoeval.integrations.trl import TransferCallback
    from topoeval.training.lora_gguf import converter_dir
    from topoeval.training.sft import TrainConfig, train

    try:
        converter_dir(fetch=False)
    except UserError as exc:
        pytest.skip(f"llama.cpp's converter is not cached (make install fetches it): {exc}")

    class Seen(TrainerCallback):  # another callback (wandb, tensorboard...): sees the logged values
        logs: list = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            self.logs.append(dict(logs or {}))

    limits = {"max_turns": 2, "max_tokens": 32}
    live = TransferCallback("wiki_to_travel", tasks=1, out=tmp_path / "live", **limits)
    work = tmp_path / "work"
    cfg = TrainConfig(protocol="wiki_to_travel", n=4, max_steps=4, save_steps=2, keep_checkpoints=True,
                      gguf=False, work_dir=work, out_dir=tmp_path / "adapters", bf16=False)
    train(cfg, callbacks=[live, Seen()])
    assert sorted(live.logged) == [2, 4]
    assert set(live.logged[2]) == {f"topoeval/{t}/{m}" for t in ("wiki", "travel") for m in ("success", "dq")}
    assert [s for s in Seen.logs if "topoeval/wiki/success" in s] == [live.logged[2], live.logged[4]]
    history = json.loads((work / "checkpoints" / "checkpoint-4" / "trainer_state.json").read_text())["log_history"]
    assert {**live.logged[2], "step": 2} in history  # the trainer's own log history holds it
    assert json.loads((tmp_path / "live" / "summary.json").read_text())["points"][-1]["step"] == 4  # the curve so far

    out = tmp_path / "sweep"
    proc = subprocess.run([*topoeval_cmd, "sweep", "wiki_to_travel", "--checkpoints", str(work / "checkpoints"),
                           "--tasks", "1", "--max-turns", "2", "--max-tokens", "32", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    swept = json.loads((out / "summary.json").read_text())
    for step in (2, 4):
        again = {f"topoeval/{c['topology']}/{m}": p["mean"] for c in swept["curves"] for m in ("success", "dq")
                 for p in c[m] if p["step"] == step and p["mean"] is not None}
        assert again == live.logged[step], step
