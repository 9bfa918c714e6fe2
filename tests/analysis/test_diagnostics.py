"""Training-signal diagnostics on hand-built cells, and in a real run's summary."""

import pytest

from topoeval.analysis.diagnostics import build_diagnostics


def rec(task, sample, success, calls=(), tokens=10, status="done", invalid=0, redundant=0):
    calls = [{"name": n, "arguments": a, "raw_arguments": "{}", "status": "ok"} for n, a in calls]
    return {"task_id": task, "sample": sample, "status": status, "calls": calls,
            "scores": {"success": float(success), "tool_calls": len(calls), "invalid_calls": invalid,
                       "redundant_calls": redundant, "completion_tokens": tokens}}


def test_group_diagnostics_need_two_samples():
    d = build_diagnostics([rec("a", 0, 1), rec("b", 0, 0)])
    assert d["samples"] == 1
    assert d["zero_signal_share"] is None and d["pass_gap"] is None and d["trajectory_diversity"] is None
    assert d["tool_calls"] == 0.0 and d["completion_tokens"]["n_success"] == 1


def test_zero_signal_pass_gap_and_diversity_over_k_samples():
    s, o = ("search", {"q": "x"}), ("open", {"t": "X"})
    records = [
        # a: all 4 failed, all did the same thing -> no signal, diversity 1/4
        *[rec("a", i, 0, [s]) for i in range(4)],
        # b: all 4 solved, two distinct trajectories -> no signal, diversity 2/4
        *[rec("b", i, 1, [s, o] if i % 2 else [s]) for i in range(4)],
        # c: 1 of 4 solved, 4 distinct trajectories -> signal; pass@4 = 1, pass@1 = 1/4
        *[rec("c", i, i == 0, [("search", {"q": str(i)})]) for i in range(4)],
    ]
    d = build_diagnostics(records)
    assert d["samples"] == 4
    assert d["zero_signal_share"] == pytest.approx(2 / 3)
    assert d["all_failed_share"] == pytest.approx(1 / 3) and d["all_solved_share"] == pytest.approx(1 / 3)
    assert d["pass_gap"] == pytest.approx((0 + 0 + (1 - 1 / 4)) / 3)
    assert d["trajectory_diversity"] == pytest.approx((1 / 4 + 2 / 4 + 4 / 4) / 3)


def test_per_episode_counts_and_tokens_by_outcome_leave_errors_out():
    records = [rec("a", 0, 1, [("s", {})] * 3, tokens=100, invalid=1, redundant=2),
               rec("b", 0, 0, [("s", {})], tokens=300),
               rec("c", 0, 0, [("s", {})], tokens=500),
               {"task_id": "d", "sample": 0, "status": "error", "calls": [], "scores": {}}]
    d = build_diagnostics(records)
    assert d["tool_calls"] == pytest.approx(5 / 3) and d["invalid_calls"] == pytest.approx(1 / 3)
    assert d["redundant_calls"] == pytest.approx(2 / 3)
    assert d["completion_tokens"] == {"success": 100.0, "failure": 400.0, "n_success": 1, "n_failure": 2}
    empty = build_diagnostics([])
    assert empty["samples"] == 0 and empty["tool_calls"] is None and empty["completion_tokens"]["success"] is None


def test_a_run_with_two_samples_reports_them_in_summary_markdown_and_html(tmp_path, echo_protocol, fixture_suites):
    import json

    import topoeval

    out = tmp_path / "run"
    result = topoeval.run_protocol(echo_protocol(n=3, samples=2), ["oracle", "noop"], out, suites_dirs=[fixture_suites])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema"] == 6
    oracle, noop = result.cell("oracle", "echo-a")["diagnostics"], result.cell("noop", "echo-a")["diagnostics"]
    assert oracle["samples"] == noop["samples"] == 2
    # a deterministic policy: every task solved (or failed) twice the same way -> no group signal, no diversity
    assert oracle["all_solved_share"] == 1.0 and noop["all_failed_share"] == 1.0
    assert oracle["zero_signal_share"] == noop["zero_signal_share"] == 1.0
    assert oracle["pass_gap"] == 0.0 and oracle["trajectory_diversity"] == 0.5
    assert oracle["tool_calls"] > 0 and noop["tool_calls"] == 0.0 and noop["completion_tokens"]["n_success"] == 0
    md = (out / "report.md").read_text()
    assert "## Training-signal diagnostics" in md and "| oracle | 0-shot | echo-a | 2 | 1.00 | 0.00 | 0.50 |" in md
    assert "Training-signal diagnostics" in (out / "report.html").read_text()


def test_a_cell_whose_prompt_outgrew_the_context_names_that_cause_not_the_call_format():
    """τ² telecom's policy and tools overflow the embedded model's 8,192 tokens: every episode ends at the context
    window before a reply, and the notice must say so rather than blame a tool-call format."""
    from topoeval.analysis.diagnostics import NO_TOOL_CALL_CAUSES, no_tool_call_notice

    def cell(status):
        return {"model": "smollm2-135m-wiki", "baseline": "0-shot", "topology": "tau2-telecom-solo",
                "never_calls_tools": True, "n_episodes": 10, "n_errors": 0, "status": status,
                "diagnostics": {"no_tool_call_episodes": 10}}

    outgrown = no_tool_call_notice([cell({"limit:context_window": 10})])
    assert "10 of their 10 episodes ended at the model's context window" in outgrown
    assert NO_TOOL_CALL_CAUSES not in outgrown
    assert no_tool_call_notice([cell({"limit:context_window": 2, "done": 8})]).endswith(f"{NO_TOOL_CALL_CAUSES}.")
