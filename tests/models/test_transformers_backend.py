"""The transformers path on a tiny random-weights Qwen2 checkpoint the test builds (offline, seconds)."""

import json

import pytest

import topoeval
from topoeval.models.options import ModelOptions

transformers = pytest.importorskip("transformers", reason="transformers is an optional extra (topoeval[hf])")
torch = pytest.importorskip("torch", reason="torch is an optional extra (topoeval[hf])")

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-qwen2")
    words = "the of a to is what stored under answer tool call name arguments lookup key value <tool_call> </tool_call> { } : \" ,".split()
    vocab = {w: i for i, w in enumerate(["<unk>", "<|im_start|>", "<|im_end|>", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>", pad_token="<|im_end|>",
                                   bos_token="<|im_start|>")
    fast.chat_template = CHATML
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["<|im_end|>"])
    Qwen2ForCausalLM(config).save_pretrained(folder)
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert size < 2_000_000
    return folder


def short_protocol(path, fixture_suites):
    from topoeval.protocol.discovery import SuiteRegistry

    proto = topoeval.load_protocol(path, SuiteRegistry([fixture_suites]))
    proto.limits.max_tokens, proto.limits.max_turns = 24, 3
    return proto


def test_tiny_checkpoint_runs_episodes(tmp_path, tiny_checkpoint, echo_protocol, fixture_suites):
    model = f"hf:{tiny_checkpoint}"
    res = topoeval.run_protocol(short_protocol(echo_protocol(n=2), fixture_suites), [model], tmp_path / "run",
                                suites_dirs=[fixture_suites], model_options=ModelOptions(n_threads=1))
    eps = [json.loads(l) for l in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 4 and res.errors == 0
    for ep in eps:
        assert ep["status"] in ("done", "limit:max_turns", "limit:max_tool_calls")
        assert ep["usage"]["prompt_tokens"] > 0 and ep["usage"]["completion_tokens"] > 0
    # a folder holding config.json is recognised without the hf: prefix too
    assert topoeval.run_protocol(short_protocol(echo_protocol(n=1), fixture_suites), [str(tiny_checkpoint)],
                                 tmp_path / "run2", suites_dirs=[fixture_suites]).new_episodes == 2
