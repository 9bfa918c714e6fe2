"""summary.json in one streaming pass: the same numbers as 207c8e0's all-at-once computation, cell for
cell and to the last bit, on a run of a shipped protocol; from a list in any order or a stream in plan
order; and what a stream keeps is bounded by tasks, not episodes."""

import asyncio
import json
import random
import sys

import pytest

from tests.analysis import summary_207c8e0 as reference
from topoeval.analysis.collapse import build_collapse
from topoeval.analysis.stats import Fold, MetricFold
from topoeval.analysis.summary import OutOfOrder, build_cells, build_summary
from topoeval.runner.run import arun_episodes

MODELS = ["oracle", "random", "oracle-quit-early", "oracle-redundant", "oracle-reckless", "noop"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A shipped protocol's episodes (wiki -> travel: every decision-quality dimension applies somewhere), three
    samples a task (pass@k, the diagnostics), a few turned into backend errors; in plan order."""
    out = tmp_path_factory.mktemp("w2t")
    episodes = asyncio.run(arun_episodes("wiki_to_travel", MODELS, out, tasks=4, samples=3, shots=[0, 2]))
    records = list(episodes.records)
    for r in records[5::37]:  # errors: out of every statistic, counted apart
        r["status"], r["scores"] = "error", {}
    return episodes, records


#: keys added after 207c8e0 (issue 60: a model that never calls a tool; issue 57: collateral), left out of the
#: comparison with it
ADDED_CELL_KEYS = ("never_calls_tools", "collateral_episodes", "nulls")
ADDED_DIAGNOSTICS = ("no_tool_call_share", "no_tool_call_episodes")


def as_json(value):
    """``value`` as JSON reads it back, without the keys 207c8e0 did not have (test_never_calls_tools.py)."""
    value = json.loads(json.dumps(value))
    cells = value if isinstance(value, list) else value.get("cells", []) if isinstance(value, dict) else []
    for c in cells:
        if isinstance(c, dict) and "diagnostics" in c:
            for key in ADDED_CELL_KEYS:
                c.pop(key, None)
            for key in ADDED_DIAGNOSTICS:
                (c.get("diagnostics") or {}).pop(key, None)
    return value


def grouped_shuffle(records, seed=0):
    """The records in another order that keeps each cell's records of one task together (cells, tasks and
    the samples inside a task shuffled)."""
    rng = random.Random(seed)
    groups = {}
    for r in records:
        groups.setdefault((r["model"], r["baseline"], r["topology"], r["task_id"]), []).append(r)
    chunks = list(groups.values())
    rng.shuffle(chunks)
    for chunk in chunks:
        rng.shuffle(chunk)
    return [r for chunk in chunks for r in chunk]


def close(a, b):
    """Equal, but floats within 1e-12 (another association of the same sums)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-12 * max(1.0, abs(a))
    return a == b


def test_cells_equal_207c8e0s_to_the_last_bit(run):
    episodes, records = run
    assert any(r["status"] == "error" for r in records)
    expected = as_json(reference.build_cells(records, episodes.order))
    assert as_json(build_cells(records, episodes.order)) == expected  # a list
    assert as_json(build_cells(iter(records), episodes.order)) == expected  # a stream, read once
    other = grouped_shuffle(records)  # any order that keeps a cell's task together: the same to the last bit
    assert as_json(build_cells(iter(other), episodes.order)) == as_json(reference.build_cells(other, episodes.order))
    # the numbers are not all round: the comparison has last bits to lose
    means = [m["mean"] for c in expected for m in c["metrics"].values() if m["mean"] is not None]
    assert any(m != round(m, 6) for m in means)


def test_a_list_in_any_order_is_grouped_by_task(run):
    episodes, records = run
    shuffled = records[:]
    random.Random(0).shuffle(shuffled)
    # 207c8e0's numbers depended on the list's order in their last bits; a list is summed task by task
    got = as_json(build_cells(shuffled, episodes.order))
    expected = as_json(reference.build_cells(shuffled, episodes.order))
    assert close(got, expected)


def test_summary_json_equals_207c8e0s(run):
    episodes, records = run
    summary = as_json(build_summary("wiki_to_travel", (r for r in records), episodes.order))
    cells = reference.build_cells(records, episodes.order)
    assert summary["cells"] == as_json(cells)
    assert summary["collapse"] == as_json(build_collapse(cells))


def test_a_stream_out_of_plan_order_is_refused_in_one_line(run):
    _, records = run
    cell = [r for r in records if (r["model"], r["baseline"], r["topology"]) == ("random", "0-shot", "travel")]
    tangled = [cell[0], cell[3], cell[1]]  # task 0, task 1, task 0 again
    with pytest.raises(OutOfOrder, match="not task by task"):
        build_cells(iter(tangled))
    assert build_cells(tangled)[0]["n_episodes"] == 3  # a list is grouped first


def test_a_stream_keeps_per_task_means_not_values():
    fold = MetricFold()
    for task in range(1000):
        for sample in range(8):
            fold.add(f"t{task}", sample, (task * 8 + sample) % 3 / 3)
    fold.close_task()
    assert fold.all.n == 8000 and len(fold.task_means) == 1000 and len(fold.samples) == 8


@pytest.mark.parametrize("seed", range(5))
def test_fold_is_sum_on_this_interpreter(seed):
    rng = random.Random(seed)
    values = [rng.choice([rng.random(), 1 / 3, 0.1, 1e16, -1e16, 0.0, 1.0]) for _ in range(200)]
    fold = Fold()
    for v in values:
        fold.add(v)
    assert fold.value() == sum(values), sys.version
