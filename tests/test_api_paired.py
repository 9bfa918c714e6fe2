"""``run_sweep`` writes the paired steps into the sweep's summary.json and report.md (a real run of reference
policies as checkpoints)."""

import json

from topoeval.analysis.sweep import SweepPoint
from topoeval.api import run_sweep


def test_a_sweep_s_summary_and_report_say_what_each_checkpoint_changed_task_by_task(tmp_path):
    points = [SweepPoint(step=0, model="noop"), SweepPoint(step=5, model="oracle")]
    sweep = run_sweep("wiki_to_travel", points, tmp_path, tasks=3, progress=False)
    (step,) = sweep["paired"]["steps"]
    assert (step["kind"], step["from_step"], step["to_step"]) == ("consecutive", 0, 5)
    assert [t["topology"] for t in step["topologies"]] == ["wiki", "travel"]
    assert all(t["n_up"] == 3 and t["n_down"] == 0 and t["n_pairs"] == 3 for t in step["topologies"])
    assert step["sentence"] == ("From step 0 to step 5: forgot nothing on wiki (3 up, 0 down of 3 tasks: a tie, "
                                "McNemar p = 0.25); forgot nothing on travel (3 up, 0 down of 3 tasks: a tie, "
                                "McNemar p = 0.25).")
    assert json.loads((tmp_path / "summary.json").read_text())["paired"] == sweep["paired"]
    assert step["sentence"] in (tmp_path / "report.md").read_text()
