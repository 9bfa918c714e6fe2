"""A sweep's paired steps (consecutive checkpoints, and the base against each later one) and the matrix's trained
models against their base, on hand-made records."""

from topoeval.analysis.matrix import matrix_vs_base
from topoeval.analysis.paired import all_cell_values
from topoeval.analysis.summary import build_summary
from topoeval.analysis.sweep import SweepPoint, sweep_curves
from topoeval.analysis.sweep_paired import sweep_flips

from .paired_folders import record

POINTS = [SweepPoint(step=0, model="base"), SweepPoint(step=100, model="ckpt-100"),
          SweepPoint(step=200, model="ckpt-200")]


def _records(solved: dict[tuple[str, str], int], n: int = 12) -> list[dict]:
    """(model, topology) -> how many of the n tasks (the first ones) it solved."""
    return [record(m, t, f"t{i:02}", 0, 1.0 if i < k else 0.0) for (m, t), k in solved.items() for i in range(n)]


RECORDS = _records({("base", "wiki"): 2, ("base", "travel"): 6, ("ckpt-100", "wiki"): 10,
                    ("ckpt-100", "travel"): 6, ("ckpt-200", "wiki"): 10, ("ckpt-200", "travel"): 1})


def test_learned_wiki_at_step_100_and_forgot_nothing_on_travel_is_a_sentence_with_task_counts():
    paired = sweep_flips(RECORDS, POINTS, "0-shot", ["wiki", "travel"])
    first = paired["steps"][0]
    assert (first["kind"], first["from_step"], first["to_step"]) == ("consecutive", 0, 100)
    assert first["sentence"] == ("From step 0 to step 100: learned wiki (8 up, 0 down of 12 tasks, McNemar p = "
                                 "0.0078); forgot nothing on travel (0 up, 0 down of 12 tasks).")
    wiki = first["topologies"][0]
    assert wiki["up"] == [f"t{i:02}" for i in range(2, 10)] and wiki["verdict"] == "b_better"


def test_the_base_is_compared_with_every_later_checkpoint_and_a_loss_is_named():
    steps = sweep_flips(RECORDS, POINTS, "0-shot", ["wiki", "travel"])["steps"]
    assert [(s["kind"], s["from_step"], s["to_step"]) for s in steps] == [
        ("consecutive", 0, 100), ("consecutive", 100, 200), ("from_base", 0, 200)]
    assert steps[1]["sentence"] == ("From step 100 to step 200: forgot nothing on wiki (0 up, 0 down of 12 tasks); "
                                    "travel: a tie (0 up, 5 down of 12 tasks, McNemar p = 0.062).")
    assert steps[2]["sentence"].startswith("From step 0 (the base) to step 200: learned wiki (8 up, 0 down")


def test_sweep_curves_carry_the_paired_section_when_given_the_run_s_records():
    summary = build_summary("proto", RECORDS)
    sweep = sweep_curves(summary, POINTS, records=RECORDS)
    by_topology = {t["topology"]: t for t in sweep["paired"]["steps"][0]["topologies"]}
    assert by_topology["wiki"]["n_up"] == 8 and by_topology["travel"]["n_up"] == 0
    assert "McNemar" in sweep["paired"]["rule"]
    assert "paired" not in sweep_curves(summary, POINTS)


def test_each_trained_model_is_compared_with_the_base_on_every_topology():
    records = _records({("base", "wiki"): 2, ("base", "travel"): 3, ("sft-wiki", "wiki"): 11,
                        ("sft-wiki", "travel"): 3})
    rows = [{"model": "base", "baseline": "0-shot", "train_topology": None},
            {"model": "sft-wiki", "baseline": "0-shot", "train_topology": "wiki"}]
    paired = matrix_vs_base(all_cell_values(records), rows, None)
    assert paired["base"] == "base" and "without a train topology" in paired["base_source"]
    (row,) = paired["rows"]
    wiki, travel = row["topologies"]
    assert (wiki["topology"], wiki["n_up"], wiki["verdict"]) == ("wiki", 9, "b_better")
    assert travel["verdict"] == "tie" and travel["phrase"] == "forgot nothing on travel (0 up, 0 down of 12 tasks)"


def test_a_matrix_without_a_base_says_why():
    rows = [{"model": m, "baseline": "0-shot", "train_topology": None} for m in ("oracle", "random")]
    paired = matrix_vs_base({}, rows, None)
    assert paired["base"] is None and paired["rows"] == []
    assert paired["why"] == ("no base: the protocol names no base_model and the run has 2 models without a train "
                             "topology (oracle, random)")
    assert matrix_vs_base({}, rows, "smollm2-135m")["why"] == "the protocol's base_model 'smollm2-135m' did not run"
