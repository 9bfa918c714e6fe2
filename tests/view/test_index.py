"""The episode index: keys read from a line's text agree with the parsed record, the latest line of a
key wins, a torn line is skipped, and a record is read back by seeking to its offset."""

import json

import pytest

import topoeval
from topoeval.runner.store import read_episodes
from topoeval.view.index import STATUSES, EpisodeIndex, find_runs


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "results" / "ref"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "random", "oracle-reckless"], out, tasks=3, shots=[0])
    return out


def test_the_index_agrees_with_the_records(run_dir):
    index = EpisodeIndex.build(run_dir)
    records = read_episodes(run_dir)
    assert len(index) == len(records) == 18
    for n, rec in enumerate(records):
        cell, task, sample, status, success, failing = index.rows[n]
        assert index.cells[cell] == (rec["model"], rec["baseline"], rec["topology"])
        assert index.tasks[task] == rec["task_id"] and sample == rec["sample"] and STATUSES[status] == rec["status"]
        assert success == int(rec["scores"]["success"] >= 1)
        assert bool(failing & (1 << 2)) == (rec["scores"]["risk"] is not None and rec["scores"]["risk"] < 1)
        assert index.records(n, n + 1) == [rec]


def test_a_retried_episode_keeps_its_place_and_a_torn_line_is_skipped(run_dir, tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    lines = (run_dir / "episodes.jsonl").read_text().splitlines(keepends=True)
    retried = json.loads(lines[1])
    retried["scores"]["success"] = 0.0
    text = "".join(lines) + json.dumps(retried) + "\n" + lines[2][:50]
    (copy / "episodes.jsonl").write_text(text)
    (copy / "run.json").write_text("{}")
    index = EpisodeIndex.build(copy)
    assert len(index) == 18 and index.rows[1][4] == 0 and index.records(1, 2)[0]["scores"]["success"] == 0.0
    assert find_runs(tmp_path) == [copy]


def test_a_line_laid_out_otherwise_is_parsed_whole(run_dir, tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    recs = read_episodes(run_dir)
    (copy / "episodes.jsonl").write_text("".join(json.dumps(dict(reversed(list(r.items())))) + "\n" for r in recs))
    (copy / "summary.json").write_text("{}")
    index = EpisodeIndex.build(copy)
    assert [index.cells[r[0]][0] for r in index.rows] == [r["model"] for r in recs]
