"""topoeval sweep: checkpoints as models in one run, curves of success and dq against the step (reference
policies stand in for checkpoints here: their scores are known)."""

import json
import subprocess

import pytest

from topoeval.analysis.sweep import SCHEMA, SweepPoint
from topoeval.api import run_sweep
from topoeval.core.errors import UserError


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    points = [SweepPoint(step=10, model="oracle"), SweepPoint(step=0, model="noop"),
              SweepPoint(step=5, model="oracle-quit-early")]
    return out, points, run_sweep("wiki_to_travel", points, out, training={"model": "stand-in", "method": "grpo", "every": 5},
                                  tasks=2, progress=False)


def test_the_curves_follow_the_checkpoints_in_step_order(swept):
    out, _, sweep = swept
    assert sweep["schema"] == SCHEMA and sweep["protocol"] == "wiki_to_travel" and sweep["baseline"] == "0-shot"
    assert [p["step"] for p in sweep["points"]] == [0, 5, 10]
    assert [(c["topology"], c["role"]) for c in sweep["curves"]] == [("wiki", "id"), ("travel", "ood")]
    for curve in sweep["curves"]:
        success = curve["success"]
        assert [p["model"] for p in success] == ["noop", "oracle-quit-early", "oracle"]
        assert success[0]["mean"] == 0.0 and success[-1]["mean"] == 1.0 and all(p["n"] == 2 for p in success)
        assert curve["dq"][-1]["mean"] == 1.0 and curve["dq"][1]["mean"] < 1.0
        assert all(len(p["ci95"]) == 2 and p["ci95"][0] <= p["mean"] <= p["ci95"][1] for p in success)
    peak = next(p for p in sweep["peaks"] if p["topology"] == "travel" and p["metric"] == "success")
    assert peak == {"topology": "travel", "role": "ood", "metric": "success", "peak_step": 10, "peak": 1.0,
                    "first": 0.0, "last": 1.0}
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(sweep))


def test_the_sweep_writes_its_plot_and_tables(swept):
    out, _, _ = swept
    assert (out / "sweep.png").stat().st_size > 5000
    md = (out / "report.md").read_text()
    assert "| step | model | wiki (id) success | wiki (id) dq | travel (ood) success | travel (ood) dq |" in md
    assert "| 10 | oracle | 1.00 [1.00, 1.00] | 1.00 [1.00, 1.00] |" in md and "![curves](sweep.png)" in md
    assert "<th>travel (ood) success</th>" in (out / "report.html").read_text()


def test_a_repeated_sweep_resumes_its_run(swept):
    out, points, sweep = swept
    lines = (out / "run" / "episodes.jsonl").read_text().splitlines()
    again = run_sweep("wiki_to_travel", points, out, tasks=2, progress=False)
    assert again["curves"] == sweep["curves"] and (out / "run" / "episodes.jsonl").read_text().splitlines() == lines
    with pytest.raises(UserError, match="share a step"):
        run_sweep("wiki_to_travel", [SweepPoint(step=1, model="noop"), SweepPoint(step=1, model="oracle")], out)


def test_the_command_needs_a_training_record(tmp_path, topoeval_cmd):
    (tmp_path / "x.json").write_text("{}")
    proc = subprocess.run([*topoeval_cmd, "sweep", str(tmp_path / "x.json")], capture_output=True, text=True)
    assert proc.returncode == 2 and "not a training record" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([*topoeval_cmd, "sweep", str(tmp_path / "absent.json")], capture_output=True, text=True)
    assert proc.returncode == 2 and "no such training record" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.local_model
@pytest.mark.slow
def test_a_sweep_evaluates_real_checkpoints_of_the_embedded_model(tmp_path, topoeval_cmd):
    """A checkpoint folder holding the shipped wiki adapter (read back into PEFT): converted, loaded on the
    embedded model's llama-server, and evaluated beside the base (step 0) on 1 task per topology."""
    pytest.importorskip("peft", reason="training is an optional extra (topoeval[train])")
    from peft import LoraConfig, get_peft_model

    from topoeval.models.adapters import adapter_path
    from topoeval.training.base_model import load_base, write_base_config
    from topoeval.training.lora_gguf import converter_dir
    from topoeval.training.lora_import import load_into_peft
    from topoeval.training.sft import TARGET_MODULES

    try:
        converter_dir(fetch=False)
    except UserError as exc:
        pytest.skip(f"llama.cpp's converter is not cached (make install fetches it): {exc}")
    base = load_base()
    model = get_peft_model(base.model, LoraConfig(r=16, lora_alpha=32, target_modules=TARGET_MODULES, task_type="CAUSAL_LM"))
    load_into_peft(model, adapter_path("smollm2-135m-wiki"))
    work = tmp_path / "work"
    model.save_pretrained(work / "checkpoints" / "checkpoint-3")
    write_base_config(base.model, work / "base")
    record = {"model": "smollm2-135m-wiki-rt", "method": "sft", "steps": 3, "protocol": "wiki_to_travel",
              "config": {"save_steps": 3}, "checkpoints": {"folder": str(work / "checkpoints"), "every": 3}}
    (tmp_path / "smollm2-135m-wiki-rt.json").write_text(json.dumps(record))
    out = tmp_path / "sweep"
    proc = subprocess.run([*topoeval_cmd, "sweep", str(tmp_path / "smollm2-135m-wiki-rt.json"), "--tasks", "1",
                           "--max-turns", "2", "--max-tokens", "32", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sweep = json.loads((out / "summary.json").read_text())
    assert sweep["points"] == [{"step": 0, "model": "smollm2-135m"}, {"step": 3, "model": "smollm2-135m-wiki-rt-step3"}]
    assert all(p["n"] == 1 for c in sweep["curves"] for p in c["success"])
    episodes = [json.loads(line) for line in (out / "run" / "episodes.jsonl").read_text().splitlines()]
    assert not [e for e in episodes if e["status"] == "error"]
    by_model = {m: [e["messages"] for e in episodes if e["model"] == m and e["topology"] == "wiki"]
                for m in ("smollm2-135m", "smollm2-135m-wiki-rt-step3")}
    assert by_model["smollm2-135m"] != by_model["smollm2-135m-wiki-rt-step3"]  # the checkpoint's adapter is applied
    assert "travel (ood) success" in (out / "report.md").read_text()
