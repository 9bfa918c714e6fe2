"""``topoeval compare``'s paired comparison: the printed flips, McNemar's p and verdict, --json, --out, refusals."""

import json

from tests.analysis.paired_folders import make_run, ones


def _run(tmp_path):
    return make_run(tmp_path / "run", {"sft": {"wiki": ones(12, 2), "travel": ones(12, 6)},
                                       "grpo": {"wiki": ones(12, 10), "travel": ones(12, 6)}})


def test_compare_models_prints_each_cell_s_flips_with_task_ids_mcnemar_p_and_verdict(tmp_path, cli):
    proc = cli("compare", str(_run(tmp_path)), "--models", "sft", "grpo")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "paired: grpo against sft" in out
    wiki = next(line for line in out.splitlines() if "│ wiki" in line)
    assert "8: t02, t03, t04, t05, t06, t07 +2 more" in wiki and "0.0078" in wiki and "grpo better" in wiki
    assert "+0.67 [" in wiki  # the paired CI of success
    travel = next(line for line in out.splitlines() if "│ travel" in line)
    assert travel.rstrip(" │").endswith("tie")
    assert "verdict rule: paired, per cell: B better when McNemar's exact p < 0.05" in out


def test_compare_json_prints_the_paired_comparison_and_out_writes_it(tmp_path, cli):
    target = tmp_path / "compare.json"
    proc = cli("compare", str(_run(tmp_path)), "--models", "sft", "grpo", "--json", "--out", str(target))
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    assert printed == json.loads(target.read_text())
    assert printed["schema"] == "topoeval.compare/1" and printed["alpha"] == 0.05
    wiki = printed["comparisons"][0]["cells"][0]
    assert wiki["flips"]["up"] == [f"t{i:02}" for i in range(2, 10)] and wiki["verdict"] == "b_better"
    assert wiki["mcnemar_p"] == 2 / 256 and wiki["quality"]["dq"]["n"] == 12


def test_two_runs_get_their_paired_comparison_beside_the_tables(tmp_path, cli):
    a = make_run(tmp_path / "a", {"base": {"wiki": ones(8, 1)}})
    b = make_run(tmp_path / "b", {"tuned": {"wiki": ones(8, 8)}})
    proc = cli("compare", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    assert "paired: tuned (b) against base (a)" in proc.stdout and "tuned (b) better" in proc.stdout


def test_two_runs_of_different_task_sets_are_refused_when_the_paired_comparison_is_asked(tmp_path, cli):
    a = make_run(tmp_path / "a", {"m": {"wiki": ones(8, 1)}}, task_set="one")
    b = make_run(tmp_path / "b", {"m": {"wiki": ones(8, 8)}}, task_set="two")
    proc = cli("compare", str(a), str(b), "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("error: runs of different task sets cannot be paired")
    assert len(proc.stderr.strip().splitlines()) == 1
    plain = cli("compare", str(a), str(b))  # the side-by-side tables still work, with a note
    assert plain.returncode == 0 and "note: no paired comparison: runs of different task sets" in plain.stdout


def test_json_without_a_pair_to_compare_is_one_line(tmp_path, cli):
    proc = cli("compare", str(_run(tmp_path)), "--json")
    assert proc.returncode == 2 and "one run with --models A B" in proc.stderr


def test_report_prints_the_collapse_table_and_says_when_a_model_never_calls_a_tool(tmp_path, cli):
    """``topoeval report`` shows what ``run`` ended with (issue 60): the collapse table with its weakest
    dimension and the reason for a "—", and the one-sentence warning for a cell without valid tool calls."""
    import topoeval

    out = tmp_path / "run"
    topoeval.run_protocol("wiki_to_travel", ["oracle"], out, tasks=2, shots=[0])
    proc = cli("report", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "collapse out of distribution" in proc.stdout and "weakest" in proc.stdout
    assert "No valid tool call" not in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    cell = summary["cells"][0]
    cell["never_calls_tools"] = True
    cell["diagnostics"] = {**(cell.get("diagnostics") or {}), "no_tool_call_episodes": 2}
    (out / "summary.json").write_text(json.dumps(summary))
    proc = cli("report", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"warning: No valid tool call in at least 80% of the episodes of {cell['model']}" in proc.stderr
    assert "--tool-format" in proc.stderr


DESIGNED = """\
name: designed
matrix:
  design:
    - base: {name: wiki, suite: wiki, params: {question_types: [single]}}
      moves:
        - {name: renamed, axis: schema, transforms: [{name: rename_tools}]}
        - {name: serial, axis: dependency, transforms: [{name: no_batch}]}
tasks:
  test: {n: 3, seed: 1}
"""


def test_compare_of_two_designed_matrix_runs_keeps_each_run_s_loss_per_axis_and_measured_descriptors(tmp_path, cli):
    from topoeval.api import compare_runs

    protocol = tmp_path / "designed.yaml"
    protocol.write_text(DESIGNED)
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        assert cli("run", str(protocol), "-m", "oracle", "--out", str(run)).returncode == 0
    proc = cli("compare", *map(str, runs))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("loss per axis around wiki")))
    assert [line.split(":")[0].strip() for line in lines[at + 1:at + 3]] == ["oracle (a)", "oracle (b)"]
    assert all("renamed 0.00 [0.00, 0.00]; serial 0.00" in line for line in lines[at + 1:at + 3])
    one = json.loads((runs[0] / "summary.json").read_text())["matrix"]
    both = compare_runs(runs)["matrix"]
    assert both["descriptors"] == one["descriptors"]
    assert both["descriptor_fit"]["n_pairs"] == 2 * one["descriptor_fit"]["n_pairs"]  # refitted over both runs
