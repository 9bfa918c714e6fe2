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
