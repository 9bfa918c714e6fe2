"""topoeval.publish.tables with k samples of a model that is not the oracle: pass@1, pass@k and pass^k differ,
and each published column holds its own (the oracle, where all three are 1, cannot tell them apart)."""

import pytest

import topoeval
from topoeval.core.messages import final
from topoeval.core.policy import Policy
from topoeval.policies.reference import OraclePolicy
from topoeval.publish.tables import matrix_rows, result_rows

K = 3


class FirstTryOnly(Policy):
    """Solves a task on its first sample only (the oracle there, an empty answer on every later one): on every
    task pass@1 = 1/k, pass@k = 1 and pass^k = 0."""

    name = "first-try"
    concurrency = 64

    def __init__(self):
        self.oracle = OraclePolicy()

    async def act(self, messages, tools, sampling, ctx):
        if ctx.sample == 0:
            return await self.oracle.act(messages, tools, sampling, ctx)
        return final("")


@pytest.fixture(scope="module")
def sampled_matrix(tmp_path_factory):
    base = tmp_path_factory.mktemp("sampled")
    path = base / "m.yaml"
    path.write_text("name: m\nmatrix:\n  topologies:\n    - {name: wiki, suite: wiki}\n"
                    "    - {name: travel, suite: travel}\ntasks: {test: {n: 2}, fewshot: {n: 2}}\n")
    return topoeval.run_protocol(str(path), [FirstTryOnly()], base / "run", samples=K, temperature=0.7,
                                 trained_on=["first-try=wiki"]).run_dir


def test_a_sampled_matrix_row_publishes_pass_at_k_and_pass_hat_k_at_the_run_s_k_not_at_1(sampled_matrix):
    rows = {(r["topology"], r["metric"]): r for r in matrix_rows(sampled_matrix)}
    for topology in ("wiki", "travel"):
        row = rows[(topology, "success")]
        assert row["samples"] == K and row["mean"] == pytest.approx(1 / K)  # pass@1
        assert row["pass_at_k"] == 1.0  # some sample of every task succeeds
        assert row["pass_hat_k"] == 0.0  # no task succeeds on every sample
        assert row["zero_signal_share"] == 0.0  # every task has both outcomes: a signal to learn from
    assert rows[("wiki", "success")]["own"] and not rows[("travel", "success")]["own"]


def test_a_sampled_results_row_lists_pass_at_k_and_pass_hat_k_for_every_k(sampled_matrix):
    rows = [r for r in result_rows(sampled_matrix) if r["metric"] == "success"]
    assert len(rows) == 2
    for row in rows:
        assert row["mean"] == pytest.approx(1 / K)
        assert row["pass_at_k"] == pytest.approx([1 / K, 2 / K, 1.0])  # pass@1, pass@2, pass@3
        assert row["pass_hat_k"] == pytest.approx([1 / K, 0.0, 0.0])  # pass^1, pass^2, pass^3


def test_the_reproduce_command_carries_every_override_the_run_had():
    from topoeval.publish.tables import reproduce_command

    meta = {"protocol": {"name": "wiki_to_travel"},
            "overrides": {"topologies": ["wiki", "travel"], "tasks": 5, "samples": 3, "max_turns": 6, "max_tokens": 64,
                          "temperature": 0.7, "top_p": 0.9}}
    assert reproduce_command(meta, "m", "2-shot") == (
        "topoeval run wiki_to_travel --model m --shots 2 --topology wiki --topology travel --tasks 5 --samples 3 "
        "--max-turns 6 --max-tokens 64 --temperature 0.7 --top-p 0.9")
    assert reproduce_command({"protocol": {"name": "p"}}, "m", "0-shot") == "topoeval run p --model m --shots 0"
    assert reproduce_command({"protocol": {"name": "p"}, "overrides": {}}, "m", "oracle-baseline") == (
        "topoeval run p --model m")


def test_a_run_without_samples_recorded_is_one_sample():
    from topoeval.publish.tables import run_samples

    assert (run_samples({}), run_samples({"samples": None}), run_samples({"samples": 4})) == (1, 1, 4)


def test_count_and_text_columns_take_whatever_a_record_holds():
    from topoeval.publish.tables import _count, _text

    assert [_count(v) for v in (3, 2.9, True, "4", None)] == [3, 2, 0, 0, 0]
    assert [_text(v) for v in (None, "é", {"a": "é"}, [1])] == [None, "é", '{"a": "é"}', "[1]"]


def row(model, topology="t", metric="success", date="2026-01-01", samples=1, task_set="s1", mean=0.5):
    return {"protocol": "p", "model": model, "baseline": "0-shot", "topology": topology, "metric": metric,
            "task_set_sha256": task_set, "samples": samples, "date": date, "mean": mean}


def test_a_new_publish_replaces_the_rows_of_its_keys_only_and_the_result_is_sorted():
    from topoeval.publish.tables import merge

    old = [row("b"), row("a", task_set="s1"), row("a", samples=2)]
    new = [row("a", task_set="s1", mean=0.75), row("c", topology="u")]
    merged = merge(old, new)
    # sorted by protocol, model, baseline, topology and metric; the kept rows before the new ones within a key
    assert [(r["model"], r["samples"], r["mean"]) for r in merged] == [("a", 2, 0.5), ("a", 1, 0.75), ("b", 1, 0.5),
                                                                        ("c", 1, 0.5)]
    assert merge([], []) == []


def test_the_latest_view_keeps_the_newest_row_of_each_key_a_dated_one_over_an_undated_one():
    from topoeval.publish.tables import latest

    rows = [row("a", date="2026-01-02", mean=0.25), row("a", date="2026-01-03", mean=0.75),
            row("a", date=None, mean=0.0), row("a", samples=2, date="2026-01-01", mean=0.5),
            row("b", date=None, mean=0.125)]
    assert [(r["model"], r["samples"], r["mean"]) for r in latest(rows)] == [("a", 1, 0.75), ("a", 2, 0.5),
                                                                              ("b", 1, 0.125)]


def test_each_episode_file_s_path_is_safe_and_k_samples_live_beside_the_greedy_ones():
    from topoeval.publish.tables import episodes_path

    assert episodes_path("p", "m", "0-shot", "0123456789abcdef") == "episodes/p/m/0-shot-0123456789ab.parquet"
    assert episodes_path("p", "m", "0-shot", "0123456789abcdef", 3) == "episodes/p/m/0-shot-0123456789ab-k3.parquet"
    assert episodes_path("../p", "org/m", "0-shot", "x") == "episodes/_.._p/org_m/0-shot-x.parquet"
