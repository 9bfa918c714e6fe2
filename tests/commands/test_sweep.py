"""topoeval sweep: checkpoints as models in one run, curves of success and dq against the step (reference
policies stand in for checkpoints here: their scores are known)."""

import json
import subprocess
from pathlib import Path

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
    assert "| step | model | weights | wiki (id) success | wiki (id) dq | travel (ood) success | travel (ood) dq |" in md
    assert "| 10 | oracle | — | 1.00 [1.00, 1.00] | 1.00 [1.00, 1.00] |" in md and "![curves](sweep.png)" in md
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


# -- topoeval sweep PROTOCOL: any models as points ---------------------------------------------------------------

STANDIN = Path(__file__).resolve().parents[1] / "serve_standin.py"


def _run(topoeval_cmd, *args, **kw):
    return subprocess.run([*topoeval_cmd, "sweep", *map(str, args)], capture_output=True, text=True, **kw)


def test_points_from_the_command_line_and_a_file_make_one_curve(tmp_path, topoeval_cmd):
    (tmp_path / "points.yaml").write_text("5: oracle-quit-early\n10: {model: oracle}\n")
    out = tmp_path / "sweep"
    proc = _run(topoeval_cmd, "wiki_to_travel", "--point", "0=noop", "--points", tmp_path / "points.yaml",
                "--tasks", "2", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    sweep = json.loads((out / "summary.json").read_text())
    assert sweep["schema"] == SCHEMA and [p["step"] for p in sweep["points"]] == [0, 5, 10]
    assert [p["model"] for p in sweep["curves"][1]["success"]] == ["noop", "oracle-quit-early", "oracle"]
    assert [p["mean"] for p in sweep["curves"][1]["success"]] == [0.0, 0.0, 1.0]
    assert "travel (ood) success rose from 0.00 to its peak 1.00 at the last step, 10." in proc.stdout
    assert (out / "sweep.png").is_file() and "## The shape" in (out / "report.md").read_text()
    # resumable: the same command runs nothing again
    lines = (out / "run" / "episodes.jsonl").read_text()
    assert _run(topoeval_cmd, "wiki_to_travel", "--point", "0=noop", "--points", tmp_path / "points.yaml",
                "--tasks", "2", "--out", out).returncode == 0
    assert (out / "run" / "episodes.jsonl").read_text() == lines


@pytest.mark.parametrize(("args", "message"), [
    (["--point", "x=oracle"], "the step must be a whole number"),
    (["--point", "3"], "write STEP=MODEL"),
    (["--point", "0=noop", "--base", "oracle"], "two points at step 0"),
    (["--points", "{tmp}/absent.yaml"], "no such file"),
    (["--points", "{tmp}/bad.yaml"], "unknown key 'api'"),
    (["--serve", "x {port} {path}"], "goes with --checkpoints"),
    (["--work-dir", "w"], "--work-dir goes with a training record"),
    ([], "name the points of the curve"),
    (["--checkpoints", "{tmp}"], "no checkpoint-<step>/ or global_step_<step>/ folders"),
])
def test_a_mistake_in_the_points_is_one_line(tmp_path, topoeval_cmd, args, message):
    (tmp_path / "bad.yaml").write_text("3: {model: oracle, api: x}\n")
    proc = _run(topoeval_cmd, "wiki_to_travel", *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_training_record_takes_no_protocol_form_flags(tmp_path, topoeval_cmd):
    proc = _run(topoeval_cmd, tmp_path / "x.json", "--point", "0=noop")
    assert proc.returncode == 2 and "--point goes with a protocol" in proc.stderr and "Traceback" not in proc.stderr


def _standin(tmp_path, variant: str, pid_dir, api_key: str | None = None):
    """A stand-in server process on its own port (the points file's two servers)."""
    import socket
    import sys
    import time
    import urllib.request

    folder = tmp_path / variant
    folder.mkdir(parents=True)
    (folder / "variant.txt").write_text(variant)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(STANDIN), "--port", str(port), "--path", str(folder), "--name",
                             "served", "--pid-dir", str(pid_dir), *(["--api-key", api_key] if api_key else [])])
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1).read()
            return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the stand-in server did not start")


def test_two_points_reach_two_servers_by_their_own_api_base(tmp_path, topoeval_cmd):
    a, url_a = _standin(tmp_path, "oracle-quit-early", tmp_path / "pids")
    b, url_b = _standin(tmp_path, "oracle", tmp_path / "pids")
    try:
        (tmp_path / "points.yaml").write_text(
            f"1: {{model: direct:served, api_base: '{url_a}', name: first}}\n"
            f"2: {{model: direct:served, api_base: '{url_b}', name: second}}\n")
        out = tmp_path / "sweep"
        proc = _run(topoeval_cmd, "wiki_to_travel", "--points", tmp_path / "points.yaml", "--tasks", "2", "--out", out)
        assert proc.returncode == 0, proc.stderr[-2000:]
    finally:
        a.kill()
        b.kill()
    sweep = json.loads((out / "summary.json").read_text())
    travel = sweep["curves"][1]
    assert [p["model"] for p in travel["success"]] == ["first", "second"]
    assert [p["mean"] for p in travel["success"]] == [0.0, 1.0]  # each point got its own server's answers
    assert "api_base" not in json.dumps(sweep["points"])  # a server's port is no part of the sweep's record


def test_a_point_reaches_its_server_with_its_own_api_key(tmp_path, topoeval_cmd):
    """A points-file entry may carry ``api_key`` (issue 60): that point's requests send it, the other point's
    the run's; the key is never written into the sweep's folder."""
    key = "point-key-4242-secret"
    a, url_a = _standin(tmp_path / "a", "oracle", tmp_path / "pids", api_key=key)
    b, url_b = _standin(tmp_path / "b", "oracle", tmp_path / "pids")
    try:
        (tmp_path / "points.yaml").write_text(
            f"1: {{model: direct:served, api_base: '{url_a}', api_key: {key}, name: keyed}}\n"
            f"2: {{model: direct:served, api_base: '{url_b}', name: open}}\n")
        out = tmp_path / "sweep"
        proc = _run(topoeval_cmd, "wiki_to_travel", "--points", tmp_path / "points.yaml", "--tasks", "1", "--out", out)
        assert proc.returncode == 0, proc.stderr[-2000:]
    finally:
        a.kill()
        b.kill()
    sweep = json.loads((out / "summary.json").read_text())
    assert [p["mean"] for p in sweep["curves"][0]["success"]] == [1.0, 1.0]  # the keyed server answered
    assert not [p for p in out.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def test_two_points_may_not_share_a_name(tmp_path):
    with pytest.raises(UserError, match="share the model name 'oracle'"):
        run_sweep("wiki_to_travel", [SweepPoint(step=1, model="oracle"), SweepPoint(step=2, model="oracle")], tmp_path)


@pytest.mark.local_model
@pytest.mark.slow
def test_peft_checkpoints_of_the_embedded_model_are_converted_once_and_evaluated(tmp_path, topoeval_cmd):
    """A trainer's folder of PEFT LoRA checkpoints of the embedded model (made here with peft, untrained but not
    zero: init_lora_weights=False): converted to GGUF LoRAs once, cached by their sha256, and evaluated on
    topoeval's llama-server beside the base (--base, step 0)."""
    pytest.importorskip("peft", reason="training is an optional extra (topoeval[train])")
    import torch
    from peft import LoraConfig, get_peft_model

    from topoeval.training.base_model import load_base
    from topoeval.training.lora_gguf import converter_dir
    from topoeval.training.sft import TARGET_MODULES

    try:
        converter_dir(fetch=False)
    except UserError as exc:
        pytest.skip(f"llama.cpp's converter is not cached (make install fetches it): {exc}")
    base = load_base()
    model = base.model
    for step, seed in ((2, 1), (4, 2)):
        torch.manual_seed(seed)
        peft_model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=TARGET_MODULES,
                                                      task_type="CAUSAL_LM", init_lora_weights=False))
        peft_model.save_pretrained(tmp_path / "trl" / f"checkpoint-{step}")
        model = peft_model.unload()
    out = tmp_path / "sweep"
    args = ["wiki_to_travel", "--checkpoints", tmp_path / "trl", "--base", "smollm2-135m", "--tasks", "1",
            "--max-turns", "2", "--max-tokens", "32", "--out", out]
    proc = _run(topoeval_cmd, *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count(": converted ") == 2 and "step 4: converted" in proc.stdout
    ggufs = {p: p.stat().st_mtime_ns for p in (out / "adapters").glob("*.gguf")}
    assert len(ggufs) == 2
    again = _run(topoeval_cmd, *args)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.count(": cached ") == 2 and ": converted " not in again.stdout  # the cache, hit
    assert {p: p.stat().st_mtime_ns for p in (out / "adapters").glob("*.gguf")} == ggufs
    sweep = json.loads((out / "summary.json").read_text())
    assert [(p["step"], p.get("name", p["model"])) for p in sweep["points"]] == [
        (0, "smollm2-135m"), (2, "step-2"), (4, "step-4")]
    assert all(p["n"] == 1 for c in sweep["curves"] for p in c["success"])
    episodes = [json.loads(line) for line in (out / "run" / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 6 and not [e for e in episodes if e["status"] == "error"]
    wiki = {e["model"]: e["messages"] for e in episodes if e["topology"] == "wiki"}
    assert wiki["step-2"] != wiki["smollm2-135m"] and wiki["step-4"] != wiki["step-2"]  # each adapter applied


def test_a_protocol_file_a_training_record_names_is_never_loaded_unasked(tmp_path, cli):
    """A training folder may come from anyone: a protocol file its record names (which would import suites and
    could run what its topologies name) is refused in one line saying to pass it with --protocol."""
    hostile = tmp_path / "hostile.yaml"
    marker = tmp_path / "marker"
    hostile.write_text(f"name: hostile\ntrain: {{name: a, suite: 'x:{marker}'}}\n")
    record = tmp_path / "run.json"
    record.write_text(json.dumps({"model": "m", "steps": 1, "config": {}, "protocol": str(hostile)}))
    proc = cli("sweep", str(record))
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr
    assert f"names the protocol file '{hostile}'" in proc.stderr and f"--protocol {hostile}" in proc.stderr
    assert not marker.exists()
    record.write_text(json.dumps({"model": "m", "steps": 1, "config": {}}))
    proc = cli("sweep", str(record))
    assert proc.returncode == 2 and "names no protocol; give --protocol" in proc.stderr
