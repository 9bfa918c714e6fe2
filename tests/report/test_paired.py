"""The paired comparison's terminal table: truncated task ids, signed differences with their CI, the verdict."""

from rich.console import Console

from topoeval.analysis.paired import PairedDiff, compare_sides
from topoeval.report.paired import fmt_diff, print_paired, task_list


def test_task_lists_are_cut_after_six_ids_with_the_count_left():
    assert task_list([]) == "—"
    assert task_list(["a", "b"]) == "a, b"
    assert task_list([f"t{i}" for i in range(9)]) == "t0, t1, t2, t3, t4, t5 +3 more"


def test_differences_are_signed_with_their_paired_ci():
    assert fmt_diff(PairedDiff(n=3, mean_a=0.2, mean_b=0.5, diff=0.3, ci95=[0.1, 0.5])) == "+0.30 [+0.10, +0.50]"
    assert fmt_diff(PairedDiff(n=0, mean_a=None, mean_b=None, diff=None, ci95=None)) == "—"


def test_cells_and_tasks_only_one_side_has_are_noted_under_the_table():
    a = {("0-shot", "wiki"): {"success": {"t1": {0: 0.0}, "t2": {0: 1.0}}}, ("0-shot", "git"): {"success": {}}}
    b = {("0-shot", "wiki"): {"success": {"t1": {0: 1.0}, "t3": {0: 1.0}}}}
    console = Console(width=200, record=True)
    print_paired(compare_sides(a, b, "sft", "grpo"), console, rule="the rule")
    text = console.export_text()
    assert "paired: grpo against sft" in text and "1: t1" in text
    assert "note: wiki/0-shot: 2 task(s) scored on one side only (1 only in A, 1 only in B), not paired" in text
    assert "note: cells only A has, not paired: git/0-shot" in text and "verdict rule: the rule" in text
