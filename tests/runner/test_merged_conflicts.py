"""MergedRecords: two finished copies of one episode must agree on everything but their timing — the same scores
with another answer or another conversation is a conflict, never a silent pick of the first."""

import json
import re

import pytest

from tests.runner.episode_records import episode, key_of
from topoeval.core.errors import UserError
from topoeval.runner.merged import TIMING_FIELDS, KeyPositions, MergedRecords, outcome


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("field,value", [
    ("final_answer", "Paris"),
    ("messages", [{"role": "user", "content": "where?"}, {"role": "assistant", "content": "Lyon"}]),
    ("calls", [{"name": "search", "arguments": {"q": "Lyon"}}]),
    ("events", [{"kind": "limit", "detail": "max_turns"}]),
    ("turns", 7),
])
def test_copies_with_equal_scores_but_another_answer_or_conversation_are_a_conflict(tmp_path, field, value):
    first = episode("k", final_answer="Lyon", turns=2)
    second = {**first, field: value}
    assert first["scores"] == second["scores"] and first != second
    a = _write(tmp_path / "a.jsonl", [first])
    b = _write(tmp_path / "b.jsonl", [second])
    k = re.escape(key_of("k"))
    for plan in (KeyPositions([key_of("k")]), None):  # a planned key and one no plan names
        with pytest.raises(UserError, match=f"episode {k} has two different results \\({a} and {b}\\)"):
            MergedRecords([a, b], plan)


def test_copies_that_differ_only_in_their_timing_are_one_episode(tmp_path):
    first = episode("k", final_answer="Lyon", wall_s=1.5, policy_s=1.0)
    a = _write(tmp_path / "a.jsonl", [first])
    b = _write(tmp_path / "b.jsonl", [{**first, "wall_s": 9.0, "policy_s": 8.0}])
    merged = MergedRecords([a, b], KeyPositions([key_of("k")]))
    assert merged.duplicates == 1 and [r["wall_s"] for r in merged] == [1.5]
    assert set(TIMING_FIELDS) == {"wall_s", "policy_s"}
    assert outcome(first) == {k: v for k, v in first.items() if k not in ("wall_s", "policy_s")}


def test_a_finished_copy_replaces_an_errored_one_whatever_it_holds(tmp_path):
    errored = episode("k", status="error", final_answer=None)
    done = episode("k", final_answer="Lyon")
    for files in (["e", "d"], ["d", "e"]):
        paths = [_write(tmp_path / f"{name}.jsonl", [errored if name == "e" else done]) for name in files]
        merged = MergedRecords(paths, KeyPositions([key_of("k")]))
        assert [r["final_answer"] for r in merged] == ["Lyon"] and merged.errors() == 0


def test_the_conflict_names_both_files_whatever_line_the_records_are_on(tmp_path):
    a = _write(tmp_path / "a.jsonl", [episode("other"), episode("k", final_answer="Lyon")])
    b = _write(tmp_path / "b.jsonl", [episode("k", final_answer="Paris")])
    with pytest.raises(UserError, match=f"^episode {re.escape(key_of('k'))} has two different results "
                                        f"\\({re.escape(str(a))} and {re.escape(str(b))}\\)"):
        MergedRecords([a, b])


def test_every_duplicate_is_counted(tmp_path):
    paths = [_write(tmp_path / f"{i}.jsonl", [episode("k", wall_s=i)]) for i in range(3)]
    assert MergedRecords(paths).duplicates == 2


def test_a_planned_key_missing_from_a_file_does_not_stop_the_keys_after_it(tmp_path):
    a = _write(tmp_path / "a.jsonl", [episode("k2")])
    merged = MergedRecords([a], KeyPositions([key_of("k1"), key_of("k2")]))
    assert list(merged.keys()) == [key_of("k2")] and merged.missing() == [key_of("k1")]


def test_an_unplanned_finished_copy_replaces_an_errored_one(tmp_path):
    a = _write(tmp_path / "a.jsonl", [episode("k", status="error")])
    b = _write(tmp_path / "b.jsonl", [episode("k", final_answer="Lyon")])
    merged = MergedRecords([a, b])  # no plan: the key is an extra one
    assert [r["final_answer"] for r in merged] == ["Lyon"] and merged.errors() == 0


def test_a_foreign_line_leaves_its_key_without_a_record_in_that_file(tmp_path):
    from topoeval.runner.store import StoreWarning

    a = _write(tmp_path / "a.jsonl", [episode("k"), {"key": key_of("k"), "scores": None}])
    with pytest.warns(StoreWarning, match=f"^{re.escape(str(a))}: skipped 1 line"):
        merged = MergedRecords([a], KeyPositions([key_of("k")]))
    assert merged.missing() == [key_of("k")] and len(merged) == 0


def test_membership_knows_planned_and_unplanned_keys(tmp_path):
    a = _write(tmp_path / "a.jsonl", [episode("planned"), episode("extra")])
    merged = MergedRecords([a], KeyPositions([key_of("planned"), key_of("absent")]))
    assert key_of("planned") in merged and key_of("extra") in merged
    assert key_of("absent") not in merged and key_of("unknown") not in merged and 7 not in merged


def test_a_file_changed_after_it_was_indexed_is_named(tmp_path):
    a, b = episode("k1"), episode("k2")
    path = _write(tmp_path / "episodes.jsonl", [a, b])
    merged = MergedRecords([path], KeyPositions([a["key"], b["key"]]))
    _write(path, [b, a])
    with pytest.raises(UserError, match=f"^{re.escape(str(path))}: changed while it was read"):
        list(merged)



def test_an_unplanned_key_whose_line_is_foreign_does_not_stop_the_keys_after_it(tmp_path):
    from topoeval.runner.store import StoreWarning

    a = _write(tmp_path / "a.jsonl", [{"key": key_of("k1"), "scores": None}, episode("k2")])
    with pytest.warns(StoreWarning):
        merged = MergedRecords([a])
    assert list(merged.keys()) == [key_of("k2")]
