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
