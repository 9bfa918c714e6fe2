"""The transfer matrix's trained models against their base, task by task: summary.json's ``matrix.paired`` and
report.md's "Against the base, task by task", from hand-made records."""

from tests.analysis.paired_folders import record
from topoeval.analysis.summary import build_summary
from topoeval.report.matrix import matrix_md


def _matrix_summary(base_model=None, models=("base", "sft-wiki")):
    solved = {("base", "wiki"): 2, ("base", "travel"): 6, ("sft-wiki", "wiki"): 11, ("sft-wiki", "travel"): 6,
              ("oracle", "wiki"): 12, ("oracle", "travel"): 12}
    records = [record(m, t, f"t{i:02}", 0, 1.0 if i < k else 0.0)
               for (m, t), k in solved.items() if m in models for i in range(12)]
    for r in records:
        r["role"] = "matrix"
    trains = {"base": {"topology": None, "source": None, "why": "not an adapter"},
              "oracle": {"topology": None, "source": None, "why": "not an adapter"},
              "sft-wiki": {"topology": "wiki", "source": "--trained-on"}}
    matrix = {"topologies": ["wiki", "travel"], "axes": {"wiki": {"user": "none"}, "travel": {"user": "sim"}},
              "train_topologies": {m: trains[m] for m in models}}
    return build_summary("m", records, matrix=matrix, base_model=base_model), iter(records)


def test_summary_json_s_matrix_pairs_each_trained_model_with_its_base_on_every_topology():
    summary, _ = _matrix_summary()
    paired = summary["matrix"]["paired"]
    assert paired["base"] == "base"
    (row,) = paired["rows"]
    by_topology = {e["topology"]: e for e in row["topologies"]}
    assert by_topology["wiki"]["n_up"] == 9 and by_topology["wiki"]["verdict"] == "b_better"
    assert by_topology["travel"]["verdict"] == "tie" and by_topology["travel"]["n_pairs"] == 12


def test_a_streamed_run_gets_the_same_paired_section_as_a_list():
    summary, stream = _matrix_summary()
    matrix = {"topologies": ["wiki", "travel"], "axes": {"wiki": {"user": "none"}, "travel": {"user": "sim"}},
              "train_topologies": {"base": {"topology": None}, "sft-wiki": {"topology": "wiki"}}}
    streamed = build_summary("m", stream, matrix=matrix)
    assert streamed["matrix"]["paired"]["rows"] == summary["matrix"]["paired"]["rows"]


def test_the_protocol_s_base_model_is_the_base_even_beside_other_untrained_models():
    summary, _ = _matrix_summary(base_model="base", models=("base", "sft-wiki", "oracle"))
    paired = summary["matrix"]["paired"]
    assert paired["base"] == "base" and paired["base_source"] == "the protocol's base_model"
    assert [r["model"] for r in paired["rows"]] == ["sft-wiki"]


def test_report_md_gives_the_paired_verdict_against_the_base_per_topology():
    summary, _ = _matrix_summary()
    md = matrix_md(summary["matrix"])
    assert "### Against the base, task by task" in md
    section = md[md.index("### Against the base, task by task"):]
    row = next(line for line in section if line.startswith("| sft-wiki | 0-shot | wiki |"))
    assert "better (9↑ 0↓ of 12, p=0.0039)" in row and "tie (0↑ 0↓ of 12, p=1)" in row


def test_without_a_base_the_report_says_why():
    summary, _ = _matrix_summary(models=("base", "sft-wiki", "oracle"))
    md = "\n".join(matrix_md(summary["matrix"]))
    assert "No paired comparison: no base: the protocol names no base_model and the run has 2 models" in md
