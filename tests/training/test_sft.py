"""Supervised fine-tuning: the SFT export, its labels, a few resumable LoRA steps on a tiny Llama, and
the adapter's GGUF conversion (never the real 135M model here)."""

import json
import subprocess
import warnings
from pathlib import Path

import datasets
import pytest

import topoeval
from topoeval.api import ContaminationWarning
from topoeval.core.errors import UserError
from topoeval.models.llamacpp_template import inference_text
from topoeval.models.llamacpp_tools import END, assistant_text
from topoeval.runner.contamination import MANIFEST
from topoeval.training.sft_data import SFT_FILE, export_sft, read_sft

from tests.training.tiny_llama import build_tiny_llama

for _pkg in ("transformers", "trl", "peft", "accelerate"):
    pytest.importorskip(_pkg, reason="training is an optional extra (topoeval[train])")


def test_cli_exports_oracle_conversations_with_fingerprints(tmp_path, topoeval_cmd):
    out = tmp_path / "sft"
    proc = subprocess.run([*topoeval_cmd, "export", "wiki_to_travel", "--format", "sft", "--tasks", "4", "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "4 conversations (train: 4 split)" in proc.stdout
    ds = datasets.load_dataset("parquet", data_files=str(out / SFT_FILE), split="train")
    assert ds.num_rows == 4 and set(ds["source"]) == {"oracle"} and set(ds["split"]) == {"train"}
    row = ds[0]
    assert [m["role"] for m in row["messages"]][:2] == ["system", "user"] and row["messages"][-1]["role"] == "assistant"
    calls = [c for m in row["messages"] if m["tool_calls"] for c in m["tool_calls"]]
    assert calls and all(isinstance(c["function"]["arguments"], str) for c in calls)
    json.loads(calls[0]["function"]["arguments"])
    assert {t["function"]["name"] for t in json.loads(row["tools"])} == {"search", "open_page"}
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["format"] == "sft" and manifest["conversations"] == 4 and len(manifest["fingerprints"]) == 4
    assert sorted(manifest["fingerprints"]) == sorted(ds["fingerprint"]) and len(manifest["data_sha256"]) == 64

    for args, message in ((["--format", "csv"], "'csv' is not one of"),
                          (["--format", "sft", "--policy", "noop"], "no successful episode to export"),
                          (["--policy", "noop"], "--policy and --from-run go with --format sft")):
        proc = subprocess.run([*topoeval_cmd, "export", "wiki_to_travel", "--tasks", "2", "--out", str(tmp_path / "x"), *args],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_runs_successful_episodes_are_exported_and_then_flagged_as_contamination(tmp_path):
    run = topoeval.run_protocol("wiki_to_travel", ["oracle", "noop"], tmp_path / "run", tasks=2, shots=[0, 1])
    manifest = export_sft("wiki_to_travel", tmp_path / "sft", policy=None, from_runs=[run.run_dir])
    # oracle: 2 tasks x 2 topologies, its 0- and 1-shot episodes are the same conversation; noop never succeeds
    assert manifest["conversations"] == 4 and manifest["conversations_by_split"] == {"test": 4}
    assert manifest["sources"] == {"run:run": {"episodes": 16, "kept": 4, "failed": 8, "tools_change": 0}}
    rows = read_sft(tmp_path / "sft")
    assert {r["topology"] for r in rows} == {"wiki", "travel"}
    with pytest.warns(ContaminationWarning, match="trained on 4 of the evaluated tasks"):
        topoeval.run_protocol("wiki_to_travel", ["noop"], tmp_path / "again", tasks=2, shots=[0],
                              trained_on=[tmp_path / "sft"])
    # the oracle's own train-split export never overlaps the test split
    export_sft("wiki_to_travel", tmp_path / "train", n=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ContaminationWarning)
        topoeval.run_protocol("wiki_to_travel", ["noop"], tmp_path / "clean", tasks=2, shots=[0],
                              trained_on=[tmp_path / "train"])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny Llama whose tokenizer was fitted on wiki and travel conversations, and an SFT export of both."""
    root = tmp_path_factory.mktemp("tiny")
    export_sft("wiki_to_travel", root / "wiki", n=3)
    export_sft("wiki_to_travel", root / "travel", n=2, topology="travel")
    rows = read_sft(root / "wiki") + read_sft(root / "travel")
    build_tiny_llama(root / "base", [inference_text(r["messages"], r["tools"]) for r in rows])
    return root, rows


def test_labels_are_exactly_the_assistant_turns(tiny, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from topoeval.training.sft import TrainConfig, make_trainer

    root, rows = tiny
    tok = AutoTokenizer.from_pretrained(root / "base")
    cfg = TrainConfig(protocol="wiki_to_travel", base=str(root / "base"), max_steps=1, bf16=False)
    trainer, tokens = make_trainer(cfg, AutoModelForCausalLM.from_pretrained(root / "base"), tok, rows, tmp_path / "ck")
    for row, example, ids in zip(rows, trainer.train_dataset, tokens["input_ids"]):
        assert example["input_ids"] == ids and tok.decode(ids) + "<|im_start|>assistant\n" == inference_text(row["messages"], row["tools"])
        learned = tok.decode([t for t, label in zip(example["input_ids"], example["labels"]) if label != -100])
        assert learned == "".join(assistant_text(m, True) + END for m in row["messages"] if m["role"] == "assistant")
        assert all(label in (-100, t) for t, label in zip(example["input_ids"], example["labels"]))


class StopAtStep:
    """A trainer callback that interrupts training once the checkpoint of ``step`` is written."""

    def __init__(self, step):
        from transformers import TrainerCallback

        class _Stop(TrainerCallback):
            def on_save(self, args, state, control, **kwargs):
                if state.global_step == step:
                    raise KeyboardInterrupt

        self.callback = _Stop()


@pytest.fixture(scope="module")
def trained(tiny):
    """Four LoRA steps, interrupted after the second step's checkpoint and resumed by the same call."""
    from topoeval.training.sft import TrainConfig, train

    root, _ = tiny
    cfg = TrainConfig(protocol="wiki_to_travel", n=3, max_steps=4, save_steps=1, keep_checkpoints=True,
                      base=str(root / "base"), bf16=False, work_dir=root / "work", out_dir=root / "adapters", gguf=False)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, "topoeval train wiki_to_travel --max-steps 4", callbacks=[StopAtStep(2).callback])
    assert not (root / "adapters").exists()
    return cfg, train(cfg, "topoeval train wiki_to_travel --max-steps 4")


@pytest.mark.slow
def test_a_few_steps_resume_and_write_an_adapter_with_its_record(trained):
    cfg, result = trained
    assert result.name == "smollm2-135m-wiki"
    assert (result.adapter_dir / "adapter_model.safetensors").stat().st_size > 0
    adapter_config = json.loads((result.adapter_dir / "adapter_config.json").read_text())
    assert adapter_config["r"] == 16 and set(adapter_config["target_modules"]) >= {"q_proj", "down_proj"}
    record = json.loads(result.record_path.read_text())
    assert record == json.loads(json.dumps(result.record))
    assert record["resumed_from"] == "checkpoint-2" and record["steps"] == 4
    assert [p["step"] for p in record["loss_curve"]] == [1, 2, 3, 4] and all(p["loss"] > 0 for p in record["loss_curve"])
    assert record["data"]["conversations"] == 3 and len(record["data"]["sha256"]) == 64
    assert record["command"] == "topoeval train wiki_to_travel --max-steps 4" and record["seed"] == 0
    assert record["tokens"]["assistant"] < record["tokens"]["total"]
    # --keep-checkpoints: every step's checkpoint stays (the sweep's points), not only the last two
    assert record["checkpoints"] == {"every": 1, "folder": str(cfg.work_dir / "checkpoints"), "kept": "all"}
    assert sorted(p.name for p in (cfg.work_dir / "checkpoints").glob("checkpoint-*")) == [
        f"checkpoint-{i}" for i in (1, 2, 3, 4)]


def test_changed_settings_do_not_resume_silently(trained):
    from topoeval.training.sft import train

    cfg, _ = trained
    with pytest.raises(UserError, match="rerun with --fresh"):
        train(cfg.model_copy(update={"learning_rate": 1e-3}))


def test_bf16_by_default_only_where_the_cpu_computes_it_natively(trained, monkeypatch):
    import torch

    from topoeval.models import fingerprint
    from topoeval.training import base_model
    from topoeval.training.sft import train

    cfg, result = trained  # trained with bf16 off
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    monkeypatch.setattr(fingerprint, "cpu", lambda: {"features": ["avx2", "fma"]})
    assert base_model.native_bf16() is False
    again = train(cfg.model_copy(update={"bf16": None}))  # resolved to off: the same settings, nothing to train
    assert again.record["steps"] == result.record["steps"] and again.record["config"]["bf16"] is False
    monkeypatch.setattr(fingerprint, "cpu", lambda: {"features": ["avx2", "amx_bf16"]})  # torch too old to probe
    assert base_model.native_bf16() is True
    with pytest.raises(UserError, match="rerun with --fresh"):  # resolved to on: other settings than the run's
        train(cfg.model_copy(update={"bf16": None}))


@pytest.mark.slow
def test_the_adapter_converts_to_a_llama_cpp_lora_gguf(trained):
    from topoeval.training.lora_gguf import converter_dir, convert_adapter

    try:
        folder = converter_dir(fetch=False)
    except UserError as exc:
        pytest.skip(f"llama.cpp's converter is not cached (make install fetches it): {exc}")
    cfg, result = trained
    out = convert_adapter(result.adapter_dir, cfg.work_dir / "base", cfg.work_dir / "tiny.gguf")
    import sys

    sys.path.insert(0, str(folder / "gguf-py"))
    try:
        from gguf import GGUFReader
    finally:
        sys.path.pop(0)
    reader = GGUFReader(str(out))
    fields = {k: reader.fields[k].contents() for k in ("general.type", "adapter.type", "adapter.lora.alpha")}
    assert fields == {"general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": 32.0}
    names = {t.name for t in reader.tensors}
    assert {"blk.0.attn_q.weight.lora_a", "blk.1.ffn_down.weight.lora_b"} <= names and len(names) == 2 * 7 * 2


def test_a_dry_run_sizes_the_data_without_training(trained, cli):
    from topoeval.training.sft import train

    cfg, result = trained
    dry = train(cfg.model_copy(update={"dry_run": True, "learning_rate": 1e-3}))  # no checkpoint is touched
    assert dry.record["tokens"] == result.record["tokens"] and dry.record["data"]["sha256"] == result.record["data"]["sha256"]
    t = dry.record["tokens"]
    assert t["conversations"] == 3 and t["shortest"] <= t["median"] <= t["longest"] and 0 < t["assistant"] < t["total"]
    proc = cli("train", "wiki_to_travel", "--tasks", "3", "--base", cfg.base, "--work-dir", str(cfg.work_dir), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert f"smollm2-135m-wiki: 3 conversations (data sha256 {dry.record['data']['sha256'][:12]})" in proc.stdout


def test_rerunning_a_finished_training_takes_no_extra_step(trained):
    from safetensors.torch import load_file

    from topoeval.training.sft import train

    cfg, result = trained
    before = load_file(str(result.adapter_dir / "adapter_model.safetensors"))
    again = train(cfg, "topoeval train wiki_to_travel --max-steps 4")
    assert again.record["steps"] == 4 and again.record["resumed_from"] == "checkpoint-4"
    assert again.record["loss_curve"] == result.record["loss_curve"]
    after = load_file(str(again.adapter_dir / "adapter_model.safetensors"))
    assert before.keys() == after.keys() and all((before[k] == after[k]).all() for k in before)


def test_a_config_read_from_a_gguf_gets_its_architecture(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    from topoeval.training.base_model import write_base_config

    model = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1))
    model.config.architectures = None  # as transformers leaves it for a GGUF file
    config = json.loads((write_base_config(model, tmp_path) / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]


def test_training_output_goes_where_the_user_is(trained, tmp_path, monkeypatch):
    """./runs/train/<name>/ and ./runs/adapters/ under the current folder, never inside the package."""
    from topoeval.training.sft import train

    cfg, _ = trained
    monkeypatch.chdir(tmp_path)
    dry = train(cfg.model_copy(update={"dry_run": True, "work_dir": None, "out_dir": None}))
    assert dry.record_path == Path("runs", "adapters", "smollm2-135m-wiki.json")
    assert dry.adapter_dir == Path("runs", "train", "smollm2-135m-wiki", "adapter")
    assert (tmp_path / "runs" / "train" / "smollm2-135m-wiki" / "data").is_dir()


@pytest.mark.slow
def test_rationale_data_is_its_own_export_and_the_record_names_its_layout(trained, tmp_path):
    """--rationale: the oracle's hold turns carry the suite's line, the export is remade when the option
    changes (not reused from the working folder), and the record names the layout the adapter is run in."""
    from topoeval.models.llamacpp_tools import PROMPT_FORMAT, RATIONALE_FORMAT
    from topoeval.training.sft import train
    from topoeval.training.sft_data import read_sft

    cfg, _ = trained
    cfg = cfg.model_copy(update={"protocol": "travel_to_wiki", "n": 2, "dry_run": True, "work_dir": tmp_path / "w"})
    plain = train(cfg)
    why = train(cfg.model_copy(update={"rationale": True}))
    assert plain.record["data"]["prompt_format"] == PROMPT_FORMAT
    assert why.record["data"]["prompt_format"] == RATIONALE_FORMAT
    assert why.record["data"]["sha256"] != plain.record["data"]["sha256"]
    texts = [m["content"] for row in read_sft(tmp_path / "w" / "data") for m in row["messages"]
             if m["role"] == "assistant" and m["tool_calls"] and m["content"]]
    assert len(texts) == 2 and all(t.startswith("Cheapest best fit: ") for t in texts)
