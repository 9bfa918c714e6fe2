"""Finding a trainer's checkpoints: HF/TRL checkpoint-<step>/, verl global_step_<step>/ (its actor's
lora_adapter/ or huggingface/ weights), --every, and the one-line errors."""

import json

import pytest

from topoeval.core.errors import UserError
from topoeval.training.checkpoint_dirs import checkpoint_points, find_checkpoints, weights_fingerprint


def _lora(folder, base="HuggingFaceTB/SmolLM2-135M-Instruct"):
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base}))
    (folder / "adapter_model.safetensors").write_bytes(b"weights of " + folder.name.encode())


def _full(folder):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model-00001-of-00002.safetensors").write_bytes(b"x" * 10)


def test_hf_and_verl_layouts_are_found_by_step(tmp_path):
    _lora(tmp_path / "checkpoint-10")
    _full(tmp_path / "checkpoint-5")
    _lora(tmp_path / "global_step_20" / "actor" / "lora_adapter")
    (tmp_path / "global_step_20" / "actor" / "huggingface").mkdir()  # config and tokenizer only, beside the LoRA
    _full(tmp_path / "global_step_30" / "actor" / "huggingface")
    (tmp_path / "runs").mkdir()  # anything else is ignored
    found = find_checkpoints(tmp_path)
    assert [(c.step, c.lora, c.weights.relative_to(tmp_path).as_posix()) for c in found] == [
        (5, False, "checkpoint-5"), (10, True, "checkpoint-10"), (20, True, "global_step_20/actor/lora_adapter"),
        (30, False, "global_step_30/actor/huggingface")]
    assert [c.step for c in find_checkpoints(tmp_path, every=10)] == [10, 20, 30]
    assert [c.name for c in find_checkpoints(tmp_path, every=20)] == ["step-20", "step-30"]


def test_a_training_work_folder_is_searched_in_its_checkpoints(tmp_path):
    _lora(tmp_path / "checkpoints" / "checkpoint-3")
    assert [c.step for c in find_checkpoints(tmp_path)] == [3]


def test_verl_shards_alone_name_the_merger(tmp_path):
    actor = tmp_path / "global_step_4" / "actor"
    (actor / "huggingface").mkdir(parents=True)
    (actor / "huggingface" / "config.json").write_text("{}")
    (actor / "model_world_size_2_rank_0.pt").write_bytes(b"")
    with pytest.raises(UserError, match="python -m verl.model_merger merge --backend fsdp --local_dir"):
        find_checkpoints(tmp_path)


def test_a_folder_without_weights_is_one_line(tmp_path):
    (tmp_path / "checkpoint-1").mkdir()
    with pytest.raises(UserError, match="neither a PEFT adapter"):
        find_checkpoints(tmp_path)
    with pytest.raises(UserError, match="no such folder"):
        find_checkpoints(tmp_path / "absent")


def test_fingerprints_follow_the_weights(tmp_path):
    _lora(tmp_path / "checkpoint-1")
    _full(tmp_path / "checkpoint-2")
    a, b = find_checkpoints(tmp_path)
    before = (weights_fingerprint(a), weights_fingerprint(b))
    (tmp_path / "checkpoint-1" / "adapter_model.safetensors").write_bytes(b"retrained")
    (tmp_path / "checkpoint-2" / "model-00001-of-00002.safetensors").write_bytes(b"y" * 11)
    after = (weights_fingerprint(a), weights_fingerprint(b))
    assert before[0] != after[0] and before[1] != after[1] and after[1].startswith("files:")


def test_a_lora_of_a_base_without_a_gguf_asks_for_one(tmp_path):
    _lora(tmp_path / "checkpoint-1", base="Qwen/Qwen3-8B")
    with pytest.raises(UserError, match="pass --base-gguf PATH .* or --serve"):
        checkpoint_points(find_checkpoints(tmp_path), tmp_path / "cache")
    points = checkpoint_points(find_checkpoints(tmp_path), tmp_path / "cache", serve="vllm serve B --port {port} "
                               "--enable-lora --lora-modules {lora_modules}")
    assert points[0].model == "direct:step-1" and points[0].path == str(tmp_path / "checkpoint-1")
