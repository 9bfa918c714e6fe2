"""MergedRecords: one record per key over several episode files, read back from the files."""

import json
import random
import re

import pytest

from tests.runner.episode_records import episode, key_of
from topoeval.core.errors import UserError
from topoeval.runner.merged import KeyPositions, MergedRecords
from topoeval.runner.store import StoreWarning


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _reference(files, planned):
    """The rule as it was when every record was read into one dict (the latest line of a key in a file,
    then the first file's record, a finished one replacing an errored one); plan order, then key order."""
    chosen = {}
    for path in files:
        latest = {}
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            latest[rec["key"]] = rec
        for key, rec in latest.items():
            if key not in chosen or chosen[key]["status"] == "error":
                chosen[key] = rec
    return [chosen[k] for k in planned if k in chosen] + [chosen[k] for k in sorted(chosen) if k not in planned]


def test_the_records_follow_the_merge_rule_in_plan_order(tmp_path):
    rng = random.Random(7)
    planned = [f"m|0-shot|wiki|t{i}|0" for i in range(60)]
    files = []
    for f in range(3):
        lines = []
        for key in rng.sample(planned + [f"x|0-shot|wiki|u{i}|0" for i in range(5)], 40):
            for attempt in range(rng.choice([1, 1, 2])):  # some keys twice in one file: the latest line wins
                status = "error" if rng.random() < 0.3 else "done"
                lines.append(episode(key, status, wall_s=rng.random(), attempt=0 if status == "done" else attempt))
        files.append(_write(tmp_path / f"episodes.shard-{f + 1}-of-3.jsonl", lines))
    merged = MergedRecords(files, KeyPositions(planned))
    want = _reference(files, planned)
    assert list(merged) == want
    assert len(merged) == len(want) and list(merged.keys()) == [r["key"] for r in want]
    assert merged.missing() == [k for k in planned if k not in {r["key"] for r in want}]
    assert merged.errors() == sum(r["status"] == "error" for r in want)
    assert list(merged) == want  # a second pass reads the same


def test_records_are_read_back_from_the_file_not_held(tmp_path):
    path = _write(tmp_path / "episodes.jsonl", [episode(f"k{i}") for i in range(3)])
    merged = MergedRecords([path])
    path.write_bytes(path.read_bytes().replace(b'"success": 1.0', b'"success": 0.5'))  # same length, same offsets
    assert [r["scores"]["success"] for r in merged] == [0.5, 0.5, 0.5]


def test_two_different_finished_results_name_the_key_and_both_files(tmp_path):
    a = _write(tmp_path / "a.jsonl", [episode("k", wall_s=1)])
    b = _write(tmp_path / "b.jsonl", [episode("k", wall_s=9)])
    c = _write(tmp_path / "c.jsonl", [episode("k", scores={"success": 0.0})])
    merged = MergedRecords([a, b])  # timing differs only: one episode
    assert merged.duplicates == 1 and [r["wall_s"] for r in merged] == [1]  # the first file's record kept
    k = re.escape(key_of("k"))
    with pytest.raises(UserError, match=f"episode {k} has two different results \\({a} and {c}\\)"):
        MergedRecords([a, b, c], KeyPositions([key_of("k")]))


def test_damaged_lines_are_skipped_with_a_warning_and_owns_filters(tmp_path):
    path = tmp_path / "episodes.jsonl"
    a, b, c = key_of("a"), key_of("b"), key_of("c")
    path.write_bytes(json.dumps(episode("a")).encode() + b'\n{"key": "' + b.encode() + b'", "sta\n'
                     + json.dumps(episode("c", "error")).encode() + b"\n")
    with pytest.warns(StoreWarning, match="line 2"):
        merged = MergedRecords([path], KeyPositions([a, b, c]), owns=lambda key: key != a)
    assert [r["key"] for r in merged] == [c] and merged.missing() == [b] and merged.errors() == 1
    assert c in merged and a not in merged and b not in merged


def test_at_most_open_files_are_open_while_reading_many_files(tmp_path, monkeypatch):
    import os

    from topoeval.runner import merged as merged_module

    monkeypatch.setattr(merged_module, "OPEN_FILES", 3)
    planned = [key_of(f"k{i:02d}") for i in range(40)]
    files = [_write(tmp_path / f"episodes.shard-{f + 1}-of-10.jsonl",
                    [episode(k) for k in planned[f::10]]) for f in range(10)]
    merged = MergedRecords(files, KeyPositions(planned))  # plan order visits the ten files in turn
    before = len(os.listdir("/proc/self/fd"))
    seen = []
    for rec in merged:
        seen.append(rec["key"])
        assert len(os.listdir("/proc/self/fd")) <= before + 3
    assert seen == planned and len(os.listdir("/proc/self/fd")) == before


def test_a_file_rewritten_after_it_was_indexed_is_an_error_not_a_wrong_record(tmp_path):
    a, b = episode("k1"), episode("k2")
    path = _write(tmp_path / "episodes.jsonl", [a, b])
    merged = MergedRecords([path], KeyPositions([a["key"], b["key"]]))
    _write(path, [b, a])  # same lengths, other order: each offset now starts the other key's line
    with pytest.raises(UserError, match="changed while it was read"):
        list(merged)
