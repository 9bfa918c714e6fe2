"""Adapter model names: smollm2-135m-<topology> is the embedded model plus a LoRA GGUF, found in
$TOPOEVAL_ADAPTERS's folders, then among the shipped ones (package data), and checked against the
sha256 of its training record before use."""

import hashlib
import json
import os
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.models import adapters
from topoeval.models.adapters import adapter_name, adapter_path, adapter_topology, is_adapter_model
from topoeval.models.llamacpp_tools import PROMPT_FORMAT, RATIONALE_FORMAT
from topoeval.policies.registry import make_policy


def write_adapter(folder: Path, model: str, data: bytes = b"GGUF", sha: str | None = None) -> Path:
    """An adapter file and a training record giving its sha256 (or ``sha``)."""
    folder.mkdir(parents=True, exist_ok=True)
    gguf = folder / f"{model}.gguf"
    gguf.write_bytes(data)
    record = {"model": model, "adapter_gguf": {"file": gguf.name, "sha256": sha or hashlib.sha256(data).hexdigest()}}
    (folder / f"{model}.json").write_text(json.dumps(record))
    return gguf


@pytest.fixture
def adapters_dir(tmp_path, monkeypatch):
    """An empty shipped folder, and no $TOPOEVAL_ADAPTERS."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr(adapters, "ADAPTERS_DIR", shipped)
    monkeypatch.delenv(adapters.ENV, raising=False)
    return shipped


def test_names():
    assert adapter_name("wiki") == "smollm2-135m-wiki" and adapter_topology("smollm2-135m-travel") == "travel"
    assert adapter_topology("smollm2-135m") is None and adapter_topology("smollm2-135m@server") is None
    assert is_adapter_model("smollm2-135m-wiki") and is_adapter_model("smollm2-135m-travel")


def test_the_shipped_adapters_are_package_data_and_match_their_records(monkeypatch):
    monkeypatch.delenv(adapters.ENV, raising=False)
    assert adapters.ADAPTERS_DIR == Path(str(files("topoeval_adapters")))
    for model in ("smollm2-135m-wiki", "smollm2-135m-travel", "smollm2-135m-wiki-grpo"):
        assert adapter_path(model) == str(adapters.ADAPTERS_DIR / f"{model}.gguf")


def test_a_missing_shipped_adapter_names_the_install_command(adapters_dir, monkeypatch):
    monkeypatch.setattr(adapters, "source_checkout", lambda: None)  # as from a wheel
    for model in ("smollm2-135m-wiki", "smollm2-135m-travel", "smollm2-135m-wiki-grpo"):
        with pytest.raises(UserError, match=f"the adapter of '{model}' is in none of .*; reinstall it: "
                                            "pip install --force-reinstall --no-deps topoeval$"):
            make_policy(model)
    with pytest.raises(UserError, match="unknown model 'smollm2-135m-hops'"):
        make_policy("smollm2-135m-hops")


def test_in_a_checkout_the_remedy_is_git(adapters_dir, monkeypatch, tmp_path):
    monkeypatch.setattr(adapters, "source_checkout", lambda: tmp_path)
    with pytest.raises(UserError, match=f"restore it: git -C {tmp_path} restore adapters/smollm2-135m-wiki.gguf"):
        adapter_path("smollm2-135m-wiki")


def test_an_adapter_that_does_not_match_its_record_is_refused(adapters_dir, monkeypatch):
    monkeypatch.setattr(adapters, "source_checkout", lambda: None)
    write_adapter(adapters_dir, "smollm2-135m-wiki", b"GGUF", sha="0" * 64)
    with pytest.raises(UserError, match=r"smollm2-135m-wiki.gguf does not match its training record \(sha256 "
                                        f"{hashlib.sha256(b'GGUF').hexdigest()[:12]}, recorded 000000000000\\); "
                                        "reinstall it: pip install"):
        adapter_path("smollm2-135m-wiki")


def test_a_grpo_adapter_elsewhere_names_the_grpo_training_that_makes_it(adapters_dir, tmp_path, monkeypatch):
    write_adapter(tmp_path / "mine", "smollm2-135m-wiki-grpo", b"tampered", sha="1" * 64)
    monkeypatch.setenv(adapters.ENV, str(tmp_path / "mine"))
    with pytest.raises(UserError, match="train it with: topoeval train wiki_to_travel --method grpo "
                                        r"\(its train topology must be 'wiki'\)"):
        adapter_path("smollm2-135m-wiki-grpo")


def test_an_adapter_without_its_record_is_refused(adapters_dir):
    (adapters_dir / "smollm2-135m-wiki.gguf").write_bytes(b"GGUF")
    with pytest.raises(UserError, match="has no training record smollm2-135m-wiki.json beside it"):
        adapter_path("smollm2-135m-wiki")
    (adapters_dir / "smollm2-135m-wiki.json").write_text("{}")
    with pytest.raises(UserError, match="no adapter_gguf.sha256 in this training record"):
        adapter_path("smollm2-135m-wiki")


def test_topoeval_adapters_is_searched_before_the_shipped_folder(adapters_dir, tmp_path, monkeypatch):
    shipped = write_adapter(adapters_dir, "smollm2-135m-wiki", b"shipped")
    write_adapter(adapters_dir, "smollm2-135m-travel", b"shipped travel")
    mine = write_adapter(tmp_path / "runs" / "adapters", "smollm2-135m-wiki", b"retrained")
    hops = write_adapter(tmp_path / "runs" / "adapters", "smollm2-135m-hops", b"any topology")
    assert adapter_path("smollm2-135m-wiki") == str(shipped)
    monkeypatch.setenv(adapters.ENV, os.pathsep.join([str(tmp_path / "nowhere"), str(tmp_path / "runs" / "adapters")]))
    assert adapter_path("smollm2-135m-wiki") == str(mine)
    assert adapter_path("smollm2-135m-travel") == str(adapters_dir / "smollm2-135m-travel.gguf")  # still shipped
    assert is_adapter_model("smollm2-135m-hops") and adapter_path("smollm2-135m-hops") == str(hops)
    write_adapter(tmp_path / "runs" / "adapters", "smollm2-135m-hops", b"tampered", sha="1" * 64)
    with pytest.raises(UserError, match="train it with: topoeval train PROTOCOL .*name its folder in \\$TOPOEVAL_ADAPTERS"):
        adapter_path("smollm2-135m-hops")


def test_an_adapter_file_makes_the_model(adapters_dir):
    from tests.models.llama_procs import require_server

    base = require_server()
    for name in ("smollm2-135m-wiki", "smollm2-135m-hops"):  # a shipped name, and any adapter someone trained
        gguf = write_adapter(adapters_dir, name)
        policy = make_policy(name)
        assert policy.name == name and policy.model_path == base and policy.lora_path == str(gguf)
        assert not policy.text_then_calls
    rationale = write_adapter(adapters_dir, "smollm2-135m-why", b"rationale")
    record = json.loads(rationale.with_suffix(".json").read_text())
    rationale.with_suffix(".json").write_text(json.dumps({**record, "data": {"prompt_format": RATIONALE_FORMAT}}))
    why = make_policy("smollm2-135m-why")
    assert why.text_then_calls  # trained with text before calls: run with it
    # the layout is part of what decoding ran on (run.json, the cache salt); the plain layout adds nothing
    assert why.inference["prompt_format"] == RATIONALE_FORMAT and "prompt_format" not in policy.inference


def test_an_adapters_prompt_format_is_its_records(tmp_path):
    gguf = write_adapter(tmp_path, "smollm2-135m-x")
    assert adapters.prompt_format(gguf) == PROMPT_FORMAT  # a record from before the key, or none at all
    assert adapters.prompt_format(tmp_path / "elsewhere.gguf") == PROMPT_FORMAT
    record = json.loads(gguf.with_suffix(".json").read_text())
    gguf.with_suffix(".json").write_text(json.dumps({**record, "data": {"prompt_format": RATIONALE_FORMAT}}))
    assert adapters.prompt_format(gguf) == RATIONALE_FORMAT


def test_make_eval_runs_the_base_beside_the_adapter_trained_on_the_protocols_train_topology(adapters_dir):
    assert adapters.default_models("wiki_to_travel") == ["smollm2-135m"]  # no adapter file: the base alone
    write_adapter(adapters_dir, "smollm2-135m-wiki")
    assert adapters.default_models("wiki_to_travel") == ["smollm2-135m", "smollm2-135m-wiki"]
    assert adapters.default_models("travel_to_wiki") == ["smollm2-135m"]  # trained on travel, not wiki
    write_adapter(adapters_dir, "smollm2-135m-travel")
    assert adapters.default_models("travel_to_wiki") == ["smollm2-135m", "smollm2-135m-travel"]


def test_make_eval_default_with_the_shipped_adapters():
    out = subprocess.run([sys.executable, "-m", "topoeval.models.adapters", "wiki_to_travel"], capture_output=True,
                         text=True, check=True, env={**os.environ, "TOPOEVAL_ADAPTERS": ""}).stdout
    assert out.strip() == "smollm2-135m,smollm2-135m-wiki"  # adapters/smollm2-135m-wiki.gguf is shipped


def test_cli_error_is_one_line(tmp_path, topoeval_cmd):
    write_adapter(tmp_path / "mine", "smollm2-135m-travel", b"GGUF", sha="2" * 64)
    env = {**os.environ, "TOPOEVAL_ADAPTERS": str(tmp_path / "mine")}
    proc = subprocess.run([*topoeval_cmd, "run", "travel_to_wiki", "--model", "smollm2-135m-travel", "--tasks", "1",
                           "--out", str(tmp_path / "r")], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'mine' / 'smollm2-135m-travel.gguf'} does not match its training record (sha256 "
        f"{hashlib.sha256(b'GGUF').hexdigest()[:12]}, recorded 222222222222); train it with: topoeval train "
        "travel_to_wiki (its train topology must be 'travel'), and name its folder in $TOPOEVAL_ADAPTERS "
        "(topoeval train writes runs/adapters/)"]


@pytest.mark.local_model
@pytest.mark.parametrize("model", ["smollm2-135m-wiki", "smollm2-135m-travel"])
def test_a_shipped_adapter_runs_episodes(tmp_path, model):
    """One short episode per topology of each shipped adapter, on the embedded base's llama-server."""
    from tests.models.llama_procs import require_server

    require_server()
    gguf, record = adapters.adapter_files(model)
    rec = json.loads(record.read_text())
    assert rec["model"] == model and rec["steps"] > 0 and rec["loss_curve"] and len(rec["data"]["sha256"]) == 64
    res = topoeval.run_protocol(adapters.TRAINED_BY[adapter_topology(model)], [model], tmp_path / "r", tasks=1,
                                shots=[0], max_turns=3, max_tokens=48)
    eps = [json.loads(l) for l in (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 2 and res.errors == 0 and all(e["usage"]["completion_tokens"] > 0 for e in eps)
