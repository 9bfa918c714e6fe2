"""decision_quality's whole record for one episode: every dimension, dq and every count, with the arguments
each dimension needs (mutation testing found the record's keys and counts unchecked: docs/development.md)."""

import pytest

from tests.metrics.test_dimensions import PAR_GOLD, TOOLS, ask, call, commit, confirm, task
from topoeval.metrics.dimensions import decision_quality

T = task(gold=PAR_GOLD, hidden_slots={"budget": 1}, commit_targets={"pay": ["A"]})
#: a search run twice (one redundant), the hold, a question about the budget and one the user cannot map,
#: a confirmed payment of A and an unconfirmed cancel
RECORD = {"calls": [call(0, "search", {"q": "x"}), call(0, "search", {"q": "x"}), call(1, "search", {"q": "y"}),
                    call(2, "hold", {"f": "1"}, changed=True)],
          "events": [ask(["budget"], 0), ask([], 1), confirm("A", 2), commit("A", 3), commit("A", 3, tool="cancel")]}


def test_the_record_of_an_episode_holds_every_dimension_dq_and_every_count():
    out = decision_quality(T, RECORD, TOOLS)
    assert set(out) == {"clarification", "priority", "risk", "parallelism", "efficiency", "dq", "coverage",
                        "over_asks", "unanswered_questions", "unsafe_commits", "serial_violations", "redundant_calls"}
    assert out["clarification"] == pytest.approx(0.5) and out["over_asks"] == 1  # the unmapped question over-asks
    assert out["priority"] is None and out["risk"] == 0.5 and out["unsafe_commits"] == 1
    assert out["unanswered_questions"] == 1 and out["redundant_calls"] == 1 and out["coverage"] == 1.0
    assert out["serial_violations"] == 0
    # a critical path of 2 turns done in 3; 3 of 4 calls achieved a node of the plan
    assert out["parallelism"] == pytest.approx(2 / 3) and out["efficiency"] == pytest.approx(0.75)
    dims = [out[d] for d in ("clarification", "risk", "parallelism", "efficiency")]
    assert out["dq"] == pytest.approx(sum(dims) / 4)


def test_a_serial_topology_has_no_parallelism_and_dq_leaves_it_out():
    out = decision_quality(T, RECORD, TOOLS, serial_only=True)
    assert out["parallelism"] is None
    assert out["dq"] == pytest.approx((out["clarification"] + out["risk"] + out["efficiency"]) / 3)
    parallel = decision_quality(T, RECORD, TOOLS)
    assert parallel["parallelism"] is not None and parallel["efficiency"] == out["efficiency"]


def test_a_record_without_calls_or_events_scores_nothing_done():
    out = decision_quality(T, {}, TOOLS)
    assert out["coverage"] == 0.0 and out["redundant_calls"] == 0 and out["unsafe_commits"] == 0
    assert out["clarification"] == 0.0 and out["risk"] is None
    assert decision_quality(task(), {}, TOOLS)["coverage"] is None  # nothing to cover


def test_redundant_calls_count_every_repeat_of_a_read_but_not_skipped_invalid_unknown_or_changed_ones():
    from topoeval.metrics.dimensions import redundant_calls

    def raw(turn, name, text, status="ok"):
        return {"turn": turn, "name": name, "arguments": None, "raw_arguments": text, "status": status}

    calls = [call(0, "search", {"q": "x"}, status="skipped"), call(0, "search", {"q": "x"}),
             call(1, "search", {"q": "x"}), call(2, "search", {"q": "x"}),  # two repeats
             call(3, "search", {"q": "z"}, status="invalid"), call(4, "search", {"q": "z"}, status="invalid"),
             call(5, "nowhere", {"q": "x"}), call(6, "nowhere", {"q": "x"}),  # an unknown tool: not counted
             raw(7, "search", "{not json"), raw(8, "search", "{not json"), raw(9, "search", "{other")]
    assert redundant_calls(calls, TOOLS) == 3  # two repeats of q=x, one of the same raw arguments
    assert redundant_calls([call(0, "search", {"q": "x"}, status="skipped"), call(1, "search", {"q": "x"}),
                            call(2, "search", {"q": "x"})], TOOLS) == 1  # a skipped call first ends nothing
