"""topoeval sweep: checkpoints as models in one run, curves of success and dq against the step (reference
policies stand in for checkpoints here: their scores are known)."""

import json
import subprocess

import pytest

from topoeval.analysis.sweep import SCHEMA, SweepPoint
from topoeval.commands.sweep import run_sweep
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
