"""Adapter model names: smollm2-135m-<topology> is the embedded model plus adapters/<name>.gguf."""

import json
import os
import subprocess
import sys

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.models import adapters
from topoeval.models.adapters import adapter_name, adapter_topology, is_adapter_model
from topoeval.policies.registry import make_policy


@pytest.fixture
def adapters_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(adapters, "ADAPTERS_DIR", tmp_path)
    return tmp_path


def test_names():
    assert adapter_name("wiki") == "smollm2-135m-wiki" and adapter_topology("smollm2-135m-travel") == "travel"
    assert adapter_topology("smollm2-135m") is None and adapter_topology("smollm2-135m@server") is None
    assert is_adapter_model("smollm2-135m-wiki") and is_adapter_model("smollm2-135m-travel")


def test_a_missing_adapter_names_the_command_that_makes_it(adapters_dir):
    for model, protocol in (("smollm2-135m-wiki", "wiki_to_travel"), ("smollm2-135m-travel", "travel_to_wiki")):
        with pytest.raises(UserError, match=f"train it with: make train PROTOCOL={protocol}"):
            make_policy(model)
    with pytest.raises(UserError, match="unknown model 'smollm2-135m-hops'"):
        make_policy("smollm2-135m-hops")


def test_an_adapter_file_makes_the_model(adapters_dir):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is an optional extra (topoeval[local])")
    try:
        from topoeval.models.embedded import embedded_gguf

        base = embedded_gguf()
    except UserError as exc:
        pytest.skip(str(exc))
    for name in ("smollm2-135m-wiki", "smollm2-135m-hops"):  # a shipped name, and any adapter someone trained
        (adapters_dir / f"{name}.gguf").write_bytes(b"GGUF")
        policy = make_policy(name)
        assert policy.name == name and policy.model_path == base and policy.lora_path == str(adapters_dir / f"{name}.gguf")


def test_make_eval_runs_the_base_beside_the_adapter_trained_on_the_protocols_train_topology(adapters_dir):
    assert adapters.default_models("wiki_to_travel") == ["smollm2-135m"]  # no adapter file: the base alone
    (adapters_dir / "smollm2-135m-wiki.gguf").write_bytes(b"GGUF")
    assert adapters.default_models("wiki_to_travel") == ["smollm2-135m", "smollm2-135m-wiki"]
    assert adapters.default_models("travel_to_wiki") == ["smollm2-135m"]  # trained on travel, not wiki
    (adapters_dir / "smollm2-135m-travel.gguf").write_bytes(b"GGUF")
    assert adapters.default_models("travel_to_wiki") == ["smollm2-135m", "smollm2-135m-travel"]


def test_make_eval_default_with_the_shipped_adapters():
    out = subprocess.run([sys.executable, "-m", "topoeval.models.adapters", "wiki_to_travel"], capture_output=True,
                         text=True, check=True, env={**os.environ, "TOPOEVAL_ADAPTERS": ""}).stdout
    assert out.strip() == "smollm2-135m,smollm2-135m-wiki"  # adapters/smollm2-135m-wiki.gguf is committed


def test_cli_error_is_one_line(tmp_path, topoeval_cmd):
    env = {**os.environ, "TOPOEVAL_ADAPTERS": str(tmp_path)}
    proc = subprocess.run([*topoeval_cmd, "run", "travel_to_wiki", "--model", "smollm2-135m-travel", "--tasks", "1",
                           "--out", str(tmp_path / "r")], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: the adapter of 'smollm2-135m-travel' is not in {tmp_path}/; train it with: make train "
        "PROTOCOL=travel_to_wiki (its train topology must be 'travel')"]


@pytest.mark.local_model
@pytest.mark.parametrize("model", ["smollm2-135m-wiki", "smollm2-135m-travel"])
def test_a_shipped_adapter_runs_episodes_in_process(tmp_path, model):
    """Runs when the adapter is in adapters/ (make train writes it): one short episode per topology."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is an optional extra (topoeval[local])")
    gguf, record = adapters.adapter_files(model)
    if not gguf.is_file():
        pytest.skip(f"{gguf.name} not trained yet (make train PROTOCOL={adapters.TRAINED_BY[adapter_topology(model)]})")
    rec = json.loads(record.read_text())
    assert rec["model"] == model and rec["steps"] > 0 and rec["loss_curve"] and len(rec["data"]["sha256"]) == 64
    res = topoeval.run_protocol(adapters.TRAINED_BY[adapter_topology(model)], [model], tmp_path / "r", tasks=1,
                                shots=[0], max_turns=3, max_tokens=48)
    eps = [json.loads(l) for l in (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 2 and res.errors == 0 and all(e["usage"]["completion_tokens"] > 0 for e in eps)
