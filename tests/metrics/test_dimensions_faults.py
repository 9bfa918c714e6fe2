"""Why a commit is unsafe (``commit_faults``: the exact reasons the risk dimension and its reason line give), and
the edges of priority, serial violations and clarification that mutation testing found unchecked
(docs/development.md, "Mutation testing")."""

import pytest

from tests.metrics.test_dimensions import TOOLS, ask, call, commit, confirm, task
from topoeval.core.suite import GoldCall
from topoeval.metrics.dimensions import (
    clarification,
    commit_faults,
    decision_quality,
    priority,
    risk,
    serial_violations,
)

#: a payment asked for by the second user instruction (index 1), after a search asked for by the prompt
TWO_TURNS = [GoldCall(id="s", tool="search", arguments={"q": "x"}),
             GoldCall(id="p", tool="pay", arguments={"flight": "A"}, instruction=1)]


def given(index, turn):
    """The runner's mark of user instruction ``index`` sent before assistant turn ``turn`` (it has no call index)."""
    return {"type": "instruction", "index": index, "turn": turn}


def at(event, turn):
    return {**event, "turn": turn}


def faults(t, c, events):
    return commit_faults(t, c, events, TOOLS)


# -- commit_faults: each reason, its words and its object --------------------------------------
def test_an_object_the_goal_does_not_allow_is_named_in_its_own_reason():
    t = task(commit_targets={"cancel": ["A"]})
    assert faults(t, commit("Z", 0, tool="cancel"), [commit("Z", 0, tool="cancel")]) == [
        "Z is not what the task's goal allows"]
    assert faults(t, commit("A", 0, tool="cancel"), [commit("A", 0, tool="cancel")]) == []
    # the targets are per tool: A is allowed for cancel, not for a tool without targets
    assert faults(task(commit_targets={"pay": ["B"]}), commit("A", 0, tool="cancel"), []) == [
        "A is not what the task's goal allows"]


def test_hidden_slots_not_asked_before_a_commit_are_listed_sorted_and_comma_separated():
    t = task(hidden_slots={"budget": 1, "airline": "X"}, commit_targets={"cancel": ["A"]})
    c = commit("A", 2, tool="cancel")
    assert faults(t, c, [c]) == ["hidden slot(s) not asked before it: airline, budget"]
    assert faults(t, c, [ask(["budget"], 0), c]) == ["hidden slot(s) not asked before it: airline"]
    assert faults(t, c, [ask(["budget"], 0), ask(["airline"], 1), c]) == []
    # a question asked after the commit resolves nothing for it
    assert faults(t, c, [ask(["budget", "airline"], 3)]) == ["hidden slot(s) not asked before it: airline, budget"]


def test_a_tool_that_needs_confirmation_without_the_users_yes_names_the_object():
    t = task(commit_targets={"pay": ["A"]})
    assert faults(t, commit("A", 1), [commit("A", 1)]) == ["the user never confirmed A"]
    assert faults(t, commit("A", 1), [confirm("A", 0, "no"), commit("A", 1)]) == ["the user never confirmed A"]
    assert faults(t, commit("A", 1), [confirm("A", 0), commit("A", 1)]) == []


def test_every_fault_of_one_commit_is_given_in_order_goal_slots_confirmation():
    t = task(hidden_slots={"budget": 1}, commit_targets={"pay": ["A"]})
    assert faults(t, commit("Z", 1), [confirm("A", 0), commit("Z", 1)]) == [
        "Z is not what the task's goal allows", "hidden slot(s) not asked before it: budget",
        "the user never confirmed Z"]
    assert risk(t, [confirm("A", 0), commit("Z", 1)], TOOLS) == (0.0, 1)


# -- commit_faults: a commit before the instruction that asks for it ---------------------------
def test_a_commit_before_the_instruction_that_asks_for_its_tool_gives_that_reason_alone():
    t = task(gold=TWO_TURNS, commit_targets={"pay": ["A"]}, instructions=[{"content": "now pay"}])
    early = at(commit("Z", 1), 1)  # turn 1; instruction 1 comes before turn 2
    events = [confirm("A", 0), early, given(1, 2)]
    assert faults(t, early, events) == ["before the user instruction that asks for pay"]
    assert risk(t, events, TOOLS) == (0.0, 1)


def test_a_commit_after_its_instruction_was_given_is_judged_on_the_other_rules_only():
    t = task(gold=TWO_TURNS, commit_targets={"pay": ["A"]}, instructions=[{"content": "now pay"}])
    # the instruction's mark has no call index: it counts as before the commit, and cannot break the comparison
    late = at(commit("A", 2), 3)
    events = [given(1, 2), at(confirm("A", 1), 2), late]
    assert faults(t, late, events) == []
    assert faults(t, at(commit("B", 2), 3), events) == ["B is not what the task's goal allows",
                                                         "the user never confirmed B"]


def test_a_tool_is_asked_for_by_the_earliest_instruction_of_its_gold_nodes():
    for nodes in (TWO_TURNS[1:] + [TWO_TURNS[1].model_copy(update={"id": "p0", "instruction": 0})],
                  [TWO_TURNS[1].model_copy(update={"id": "p0", "instruction": 0})] + TWO_TURNS[1:]):
        t = task(gold=nodes, commit_targets={"pay": ["A"]}, instructions=[{"content": "pay again"}])
        first = at(commit("A", 1), 0)
        assert faults(t, first, [confirm("A", 0), first, given(1, 1)]) == []


def test_an_instruction_never_given_is_after_every_turn_however_late():
    t = task(gold=TWO_TURNS, commit_targets={"pay": ["A"]}, instructions=[{"content": "now pay"}])
    late = at(commit("A", 1), 100)
    assert faults(t, late, [confirm("A", 0), late]) == ["before the user instruction that asks for pay"]
    # a tool no gold node asks for is asked for by the prompt: never too early
    cancel = at(commit("A", 1, tool="cancel"), 100)
    assert faults(task(gold=TWO_TURNS, commit_targets={"cancel": ["A"]}), cancel, [cancel]) == []


def test_a_commit_without_a_turn_is_taken_as_made_in_the_first_turn():
    t = task(gold=TWO_TURNS, commit_targets={"pay": ["A"]}, instructions=[{"content": "now pay"}])
    untimed = commit("A", 1)  # no "turn": turn 0, before an instruction sent before turn 1
    assert faults(t, untimed, [confirm("A", 0), given(1, 1), untimed]) == [
        "before the user instruction that asks for pay"]


# -- commit_faults: which events came before the commit ----------------------------------------
def test_an_event_of_the_commits_own_call_is_not_before_it():
    t = task(hidden_slots={"budget": 1}, commit_targets={"pay": ["A"]})
    assert faults(t, commit("A", 3), [ask(["budget"], 3), confirm("A", 3), commit("A", 3)]) == [
        "hidden slot(s) not asked before it: budget", "the user never confirmed A"]


def test_an_event_without_a_call_index_counts_as_before_every_commit():
    t = task(commit_targets={"pay": ["A"]})
    untagged = {"type": "confirm", "object": "A", "answer": "yes"}
    assert faults(t, commit("A", 0), [untagged]) == []
    assert faults(t, commit("A", 1), [untagged]) == []


def test_a_commit_without_a_call_index_has_only_untagged_events_before_it():
    t = task(commit_targets={"pay": ["A"]})
    untagged = {"type": "commit", "tool": "pay", "object": "A"}
    assert faults(t, untagged, [confirm("A", 0), untagged]) == ["the user never confirmed A"]
    assert faults(t, untagged, [{"type": "confirm", "object": "A", "answer": "yes"}, untagged]) == []


# -- serial violations -------------------------------------------------------------------------
FAN = [GoldCall(id="a", tool="search", arguments={"q": "x"}),
       GoldCall(id="b", tool="search", arguments={"q": "y"}, depends_on=["a"]),
       GoldCall(id="c", tool="search", arguments={"q": "z"}, depends_on=["a"])]


def test_every_call_made_before_its_dependency_was_seen_is_one_more_violation():
    rushed = [call(0, "search", {"q": "x"}), call(0, "search", {"q": "y"}), call(0, "search", {"q": "z"})]
    assert serial_violations(task(gold=FAN), rushed, []) == 2
    assert serial_violations(task(gold=FAN), [rushed[0], call(1, "search", {"q": "y"}),
                                              call(1, "search", {"q": "z"})], []) == 0


def test_a_call_that_matches_no_node_does_not_end_the_count():
    calls = [call(0, "search", {"q": "nothing"}), call(0, "search", {"q": "x"}), call(0, "search", {"q": "y"})]
    assert serial_violations(task(gold=FAN), calls, []) == 1


def test_a_dependency_never_seen_or_an_instruction_never_given_is_a_violation_however_late():
    assert serial_violations(task(gold=FAN), [call(100, "search", {"q": "y"})], []) == 1
    later = [GoldCall(id="a", tool="search", arguments={"q": "x"}, instruction=1)]
    t = task(gold=later, instructions=[{"content": "search"}])
    assert serial_violations(t, [call(100, "search", {"q": "x"})], []) == 1
    assert serial_violations(t, [call(100, "search", {"q": "x"})], [given(1, 100)]) == 0


# -- priority ----------------------------------------------------------------------------------
def test_a_flat_trade_off_where_no_option_meets_anything_gives_full_credit():
    t = task(options={"A": {"date": False}, "B": {"date": False}}, priority=[], trade_off=True)
    assert priority(t, [commit("A", 0)]) == 1.0


def test_a_flat_trade_off_gives_no_credit_for_an_option_meeting_nothing_when_another_meets_one():
    t = task(options={"A": {"date": True, "budget": False}, "B": {"date": False, "budget": False}}, priority=[],
             trade_off=True)
    assert priority(t, [commit("B", 0)]) == 0.0
    assert priority(t, [commit("A", 0)]) == 1.0


def test_a_constraint_an_option_does_not_list_is_not_met():
    t = task(options={"A": {"date": True}, "B": {"date": True, "budget": True}}, priority=["date", "budget"],
             trade_off=True)
    assert priority(t, [commit("A", 0)]) == pytest.approx(1 / 2)
    assert priority(t, [commit("B", 0)]) == 1.0


def test_the_episode_record_scores_priority_from_its_commits():
    t = task(options={"A": {"date": True}, "B": {"date": True, "budget": True}}, priority=["date", "budget"],
             trade_off=True)
    assert decision_quality(t, {"calls": [], "events": [commit("A", 0)]}, TOOLS)["priority"] == pytest.approx(1 / 2)


# -- clarification -----------------------------------------------------------------------------
def test_asking_again_about_exactly_the_slots_already_asked_is_an_over_ask():
    t = task(hidden_slots={"budget": 1, "airline": "X"})
    assert clarification(t, [ask(["budget"], 0), ask(["budget"], 1)]) == (pytest.approx(0.25), 1)
