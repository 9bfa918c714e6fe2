"""examples/reproduce_wiki_to_travel.py reproduces the committed snapshot, and notices a changed number."""

import subprocess
import sys
from pathlib import Path

import datasets
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "reproduce_wiki_to_travel.py"
SNAPSHOT = ROOT / "results" / "hub" / "data" / "results.parquet"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.slow
def test_reference_rows_reproduce_within_their_published_ci(tmp_path):
    proc = run("--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    done, total = last.split()[0].split("/")
    assert done == total and int(total) >= 7 * 4 * 2 * 2  # models x baselines x topologies x metrics


@pytest.mark.slow
def test_a_published_number_that_does_not_reproduce_fails(tmp_path):
    rows = datasets.load_dataset("parquet", data_files=str(SNAPSHOT), split="train").to_list()
    for r in rows:
        if r["protocol"] == "wiki_to_travel" and r["model"] == "oracle" and r["metric"] == "success":
            r["mean"], r["ci_low"], r["ci_high"] = 0.5, 0.4, 0.6
    tampered = tmp_path / "tampered.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(tampered))
    proc = run("--out", str(tmp_path / "r"), "--snapshot", str(tampered))
    assert proc.returncode == 1 and "OUT OF CI" in proc.stdout


@pytest.mark.slow
def test_a_degenerate_published_interval_is_judged_by_overlap(tmp_path):
    """A published interval of width 0 (here oracle-no-ask's success as 0.86 [0.86, 0.86]) is met by a
    reproduced interval that reaches it, though the reproduced mean (0.76) is not inside it."""
    rows = datasets.load_dataset("parquet", data_files=str(SNAPSHOT), split="train").to_list()
    hit = 0
    for r in rows:
        if (r["protocol"], r["model"], r["metric"], r["topology"]) == ("wiki_to_travel", "oracle-no-ask", "success", "travel"):
            r["mean"] = r["ci_low"] = r["ci_high"] = r["ci_high"]
            hit += 1
    assert hit
    degenerate = tmp_path / "degenerate.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(degenerate))
    proc = run("--out", str(tmp_path / "r"), "--snapshot", str(degenerate))
    assert proc.returncode == 0, proc.stdout
    assert any(l.startswith("oracle-no-ask") and "travel" in l and "success" in l and "ok (CIs overlap)" in l
               for l in proc.stdout.splitlines()), proc.stdout


def test_the_travel_procedure_counts_what_the_episodes_did(tmp_path):
    """examples/travel_procedure.py (the README's per-episode collapse counts) on reference policies:
    the oracle goes through search, hold, confirmation and payment on every travel task it solves,
    the no-op policy does nothing."""
    import topoeval

    out = tmp_path / "run"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "noop"], out, tasks=4, shots=[0])
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "travel_procedure.py"), str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    table = [[cell.strip() for cell in line.strip("|").split("|")] for line in proc.stdout.splitlines()[2:]]
    rows = {(cells[0], cells[1]): cells for cells in table}
    oracle, noop = rows[("oracle", "0-shot")], rows[("noop", "0-shot")]
    assert oracle[2] == "4" and oracle[4] == "4" and oracle[5] == "4" and oracle[6] == "0", oracle
    assert oracle[7:] == ["4", "4", "0"], oracle  # it holds the traveller's flight, with no line before it
    assert noop[2:] == ["4", "0", "0", "0", "0", "0", "0", "0"], noop


def test_comparing_snapshots_counts_identical_numbers_and_fails_on_a_disjoint_one(tmp_path):
    """examples/compare_snapshots.py (docs/publishing.md's before/after counts): the committed snapshot
    against itself is all identical; a local model's number moved out of its CI fails it."""
    script = ROOT / "examples" / "compare_snapshots.py"
    latest = ROOT / "results" / "hub" / "data" / "latest.parquet"
    same = subprocess.run([sys.executable, str(script), str(latest), str(latest)], capture_output=True, text=True)
    assert same.returncode == 0, same.stderr
    line = next(x for x in same.stdout.splitlines() if x.startswith("wiki_to_travel:"))
    total, identical = line.split(": ")[1].split(", ")[:2]
    assert total.split()[0] == identical.split()[0] and int(identical.split()[0]) >= 48
    rows = datasets.load_dataset("parquet", data_files=str(latest), split="train").to_list()
    for r in rows:
        if (r["protocol"], r["model"], r["baseline"], r["topology"], r["metric"]) == (
                "wiki_to_travel", "smollm2-135m-wiki", "0-shot", "wiki", "success"):
            r["mean"], r["ci_low"], r["ci_high"] = 0.0, 0.0, 0.0
    moved = tmp_path / "moved.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(moved))
    proc = subprocess.run([sys.executable, str(script), str(latest), str(moved)], capture_output=True, text=True)
    assert proc.returncode == 1 and "DISJOINT" in proc.stdout, proc.stdout
