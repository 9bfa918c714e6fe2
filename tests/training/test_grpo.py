"""GRPO through TRL in topoeval's own environment: the rollout's turn parser and token masks (a scripted
policy that plays the oracle's turns), a few resumable GRPO steps on a tiny Llama with their per-step
diagnostics, the record's report, and a shipped GGUF LoRA read back into PEFT (never the real 135M
model trained here)."""

import json
import types

import pytest

from topoeval.core.errors import UserError
from topoeval.models.llamacpp_template import inference_text
from topoeval.models.llamacpp_tools import END, assistant_text
from topoeval.training.grpo_rollout import Rollouts, parse_turn
from topoeval.training.sft_data import export_sft, read_sft

from tests.training.test_sft import StopAtStep
from tests.training.tiny_llama import build_tiny_llama

for _pkg in ("transformers", "trl", "peft", "accelerate"):
    pytest.importorskip(_pkg, reason="training is an optional extra (topoeval[train])")


def test_a_turn_in_the_tools_layout_parses_to_calls_or_a_message():
    assert parse_turn('functions.search:\n{"query": "Yara"}') == {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "search", "arguments": '{"query": "Yara"}'}}]}
    two = parse_turn('functions.open_page:\n{"title": "A"}\nfunctions.open_page:\n{"title": "B"}')
    assert [c["function"]["arguments"] for c in two["tool_calls"]] == ['{"title": "A"}', '{"title": "B"}']
    assert parse_turn("message:\n 1987 ") == {"role": "assistant", "content": "1987"}
    assert parse_turn("gibberish") == {"role": "assistant", "content": "gibberish"}
    # bad JSON stays the arguments: the env records an invalid call, never an exception
    assert parse_turn("functions.search:\n{oops")["tool_calls"][0]["function"]["arguments"] == "{oops"


def test_a_rationale_turn_keeps_its_text_before_its_calls_only_in_that_layout():
    turn = 'message:\nWanted: X. Cheapest best fit: A, $5: F1.\nfunctions.hold_seat:\n{"flight_id": "F1"}'
    parsed = parse_turn(turn, text_then_calls=True)
    assert parsed["content"] == "Wanted: X. Cheapest best fit: A, $5: F1."
    assert [c["function"]["arguments"] for c in parsed["tool_calls"]] == ['{"flight_id": "F1"}']
    assert "tool_calls" not in parse_turn(turn)  # the plain layout: all of it is a message
    assert parse_turn("message:\n 1987 ", text_then_calls=True) == {"role": "assistant", "content": "1987"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny Llama whose tokenizer was fitted on wiki conversations, and the oracle's conversations."""
    root = tmp_path_factory.mktemp("tiny_grpo")
    export_sft("wiki_to_travel", root / "wiki", n=4)
    rows = read_sft(root / "wiki")
    build_tiny_llama(root / "base", [inference_text(r["messages"], r["tools"]) for r in rows])
    return root, rows


class ScriptedModel:
    """Stands in for the policy: each ``generate`` writes the next oracle turn of each row's task."""

    def __init__(self, tok, turns_by_prompt_len):
        self.tok, self.turns, self.training, self.calls = tok, turns_by_prompt_len, True, 0

    def eval(self):
        self.training = False

    def train(self, mode=True):
        self.training = mode

    def generate(self, input_ids, attention_mask, max_new_tokens, eos_token_id, pad_token_id, **_):
        import torch

        self.calls += 1
        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
            context = [t for t, m in zip(ids, mask) if m]
            turn = self.turns[self.tok.decode(context)]
            rows.append(ids + turn)
        width = max(map(len, rows))
        return torch.tensor([r + [pad_token_id] * (width - len(r)) for r in rows])


def test_rollouts_play_whole_episodes_with_the_envs_tokens_masked(tiny):
    from transformers import AutoTokenizer

    from topoeval.protocol.loader import load_protocol
    from topoeval.protocol.topology import topology_from

    root, rows = tiny
    tok = AutoTokenizer.from_pretrained(root / "base")
    protocol = load_protocol("wiki_to_travel")
    # the oracle's conversation of train tasks 0 and 1: the prompt before each assistant turn -> that turn's tokens
    turns = {}
    for row in rows[:2]:
        msgs = row["messages"]
        for i, m in enumerate(msgs):
            if m["role"] == "assistant":
                turns[inference_text(msgs[:i], row["tools"])] = tok(assistant_text(m, True) + END, add_special_tokens=False)["input_ids"]
    model = ScriptedModel(tok, turns)
    trainer = types.SimpleNamespace(processing_class=tok, model=model, _metrics={"train": __import__("collections").defaultdict(list)})
    rollouts = Rollouts(topology_from("wiki", protocol), task_seed=protocol.tasks.train.seed, n_tasks=protocol.tasks.train.n,
                        max_turns=8, max_tool_calls=16, turn_tokens=64, max_completion_tokens=2048, temperature=0.0, top_p=1.0)
    out = rollouts([[{"role": "user", "content": "", "task_index": i}] for i in (0, 0, 1)], trainer)
    assert out["episode_reward"] == [1.0, 1.0, 1.0] and out["episode_success"] == [1.0, 1.0, 1.0]
    assert model.training and model.calls == max(sum(m["role"] == "assistant" for m in r["messages"]) for r in rows[:2])
    for k, row in zip(range(3), (rows[0], rows[0], rows[1])):
        ids, mask = out["completion_ids"][k], out["env_mask"][k]
        assert len(ids) == len(mask) == len(out["logprobs"][k])
        # prompt + completion is the inference text of the whole episode (the final answer closes it)
        assert tok.decode(out["prompt_ids"][k] + ids) + "\n" + "<|im_start|>assistant\n" == inference_text(row["messages"], row["tools"])
        model_part = tok.decode([t for t, m in zip(ids, mask) if m])
        assert model_part == "".join(assistant_text(m, True) + END for m in row["messages"] if m["role"] == "assistant")
        assert out["episode_tool_calls"][k] == sum(len(m["tool_calls"] or []) for m in row["messages"])
    assert trainer._metrics["train"]["episode/success"] == [1.0] and trainer._metrics["train"]["tools/invalid_calls"] == [0.0]


@pytest.fixture(scope="module")
def grpo_run(tiny):
    """Three GRPO steps of a fresh LoRA on the tiny Llama, interrupted after step 2's checkpoint and resumed."""
    from topoeval.training.grpo import GrpoConfig, train_grpo

    root, _ = tiny
    cfg = GrpoConfig(protocol="wiki_to_travel", init="base", base=str(root / "base"), n=4, max_steps=3,
                     num_generations=2, prompts_per_step=2, max_turns=2, turn_tokens=6, max_completion_tokens=12,
                     temperature=1.0, save_steps=1, work_dir=root / "work", out_dir=root / "adapters", gguf=False,
                     progress=False)
    with pytest.raises(KeyboardInterrupt):
        train_grpo(cfg, "topoeval train wiki_to_travel --method grpo", callbacks=[StopAtStep(2).callback])
    assert not (root / "adapters").exists()
    return cfg, train_grpo(cfg, "topoeval train wiki_to_travel --method grpo")


@pytest.mark.slow
def test_grpo_steps_resume_and_record_their_diagnostics(grpo_run):
    cfg, result = grpo_run
    record = json.loads(result.record_path.read_text())
    assert result.name == "smollm2-135m-wiki-grpo" and record["method"] == "grpo" and record["steps"] == 3
    assert record["resumed_from"] == "checkpoint-2" and record["checkpoints"]["steps"] == [1, 2, 3]
    assert record["rollouts_per_step"] == 4 and record["reward"] == "success" and record["init"]["kind"] == "base"
    curve = record["diagnostics"]
    assert [r["step"] for r in curve] == [1, 2, 3]  # steps 1-2 come back from the checkpoint's trainer state
    row = curve[-1]
    for key in ("reward", "reward_std", "zero_std_share", "kl", "entropy", "clip_fraction", "completion_tokens",
                "tool_calls", "invalid_calls", "redundant_calls", "success", "dq"):
        assert row[key] is not None, key
    assert 0 < row["completion_tokens"] <= cfg.max_completion_tokens and 0 <= row["zero_std_share"] <= 1
    assert row["entropy"] > 0 and row["kl"] >= 0
    assert (result.record_path.parent / record["plot"]).stat().st_size > 1000
    assert (result.adapter_dir / "adapter_model.safetensors").is_file() and not (result.adapter_dir / "ref").exists()


def test_grpo_refuses_to_resume_other_settings_and_reruns_take_no_step(grpo_run):
    from topoeval.training.grpo import train_grpo

    cfg, result = grpo_run
    with pytest.raises(UserError, match="rerun with --fresh"):
        train_grpo(cfg.model_copy(update={"beta": 0.5}))
    again = train_grpo(cfg)
    assert again.record["steps"] == 3 and again.record["resumed_from"] == "checkpoint-3"
    with pytest.raises(UserError, match="neither 'sft', 'base' nor a GGUF LoRA"):
        train_grpo(cfg.model_copy(update={"init": "nowhere.bin"}))


def test_report_of_a_training_run_shows_its_diagnostics(grpo_run, cli):
    _, result = grpo_run
    proc = cli("report", str(result.record_path.parent))
    assert proc.returncode == 0, proc.stderr
    assert "| step | reward | reward_std | zero_std_share | kl |" in proc.stdout and "zero-std group share" in proc.stdout
    report = (result.record_path.parent / f"{result.name}.report.md").read_text()
    assert "![diagnostics](smollm2-135m-wiki-grpo.png)" in report and "| 3 |" in report
    proc = cli("report", str(result.adapter_dir))
    assert proc.returncode == 2 and "neither a run folder" in proc.stderr


@pytest.mark.local_model
@pytest.mark.slow
def test_a_shipped_gguf_lora_reads_back_into_peft_as_llama_cpp_reads_it():
    from peft import LoraConfig, get_peft_model

    from topoeval.models.adapters import adapter_path
    from topoeval.training.base_model import load_base
    from topoeval.training.lora_gguf import gguf_agreement
    from topoeval.training.lora_import import load_into_peft
    from topoeval.training.sft import TARGET_MODULES

    base = load_base()
    model = get_peft_model(base.model, LoraConfig(r=16, lora_alpha=32, target_modules=TARGET_MODULES, task_type="CAUSAL_LM"))
    gguf = adapter_path("smollm2-135m-wiki")
    assert load_into_peft(model, gguf) == 30 * 7 * 2
    text = ("<|im_start|>user\nIn what year was Yara Rolam born?<|im_end|>\n<|im_start|>assistant\n"
            'functions.search:\n{"query": "Yara Rolam"}<|im_end|>')
    agreement = gguf_agreement(model, base.tokenizer(text, add_special_tokens=False)["input_ids"], base.source, gguf)
    if agreement is None:
        pytest.skip("llama-cpp-python's binding is not installed")
    # q/k rows left in llama.cpp's rotary order would give a correlation far below this
    assert agreement["correlation"] > 0.95 and agreement["mean_abs_change_transformers"] > 0.3


@pytest.mark.slow
def test_checkpoints_become_adapter_models_for_a_sweep(grpo_run, tmp_path, monkeypatch):
    from topoeval.models.adapters import adapter_path
    from topoeval.training.checkpoints import checkpoint_points, read_record
    from topoeval.training.lora_gguf import converter_dir

    try:
        converter_dir(fetch=False)
    except UserError as exc:
        pytest.skip(f"llama.cpp's converter is not cached (make install fetches it): {exc}")
    _, result = grpo_run
    record, path = read_record(result.record_path.parent)
    assert path == result.record_path
    points = checkpoint_points(record, tmp_path / "adapters", every=2)
    # step 0 is the start (init base: the base model); every 2nd checkpoint and the last
    assert [(p.step, p.model) for p in points] == [(0, "smollm2-135m"), (2, "smollm2-135m-wiki-grpo-step2"),
                                                   (3, "smollm2-135m-wiki-grpo-step3")]
    monkeypatch.setenv("TOPOEVAL_ADAPTERS", str(tmp_path / "adapters"))
    meta = json.loads((tmp_path / "adapters" / "smollm2-135m-wiki-grpo-step3.json").read_text())
    assert adapter_path("smollm2-135m-wiki-grpo-step3").endswith("step3.gguf") and meta["step"] == 3
    mtime = (tmp_path / "adapters" / "smollm2-135m-wiki-grpo-step3.gguf").stat().st_mtime_ns
    checkpoint_points(record, tmp_path / "adapters")  # converted once: the same checkpoint is not converted again
    assert (tmp_path / "adapters" / "smollm2-135m-wiki-grpo-step3.gguf").stat().st_mtime_ns == mtime
    assert (tmp_path / "adapters" / "smollm2-135m-wiki-grpo-step1.gguf").is_file()
