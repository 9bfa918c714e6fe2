"""Progress along the gold plan, and the progress-aware parallelism and efficiency built on it."""

import pytest

from topoeval.core.suite import GoldCall, Task
from topoeval.metrics.dimensions import decision_quality, efficiency, parallelism
from topoeval.metrics.progress import progress, project

from .test_dimensions import TOOLS, ask, call, confirm, task

# ask the budget -> two searches (parallel) -> hold -> confirm -> pay
TRAVEL_GOLD = [
    GoldCall(id="ask", tool="ask_user", arguments={"question": "budget?"}, match="ask"),
    GoldCall(id="s0", tool="search", arguments={"q": "d1"}),
    GoldCall(id="s1", tool="search", arguments={"q": "d2"}),
    GoldCall(id="hold", tool="hold", arguments={"f": "A"}, depends_on=["s0", "s1", "ask"]),
    GoldCall(id="confirm", tool="ask_user", arguments={"question": "A?"}, depends_on=["hold"], match="confirm"),
    GoldCall(id="pay", tool="pay", arguments={"h": "$hold"}, depends_on=["hold", "confirm"], match="tool"),
]


def travel_task(**kw) -> Task:
    return task(gold=TRAVEL_GOLD, hidden_slots={"budget": 400}, **kw)


def oracle_calls() -> tuple[list[dict], list[dict]]:
    calls = [call(0, "ask_user", {"question": "budget?"}), call(1, "search", {"q": "d1"}), call(1, "search", {"q": "d2"}),
             call(2, "hold", {"f": "A"}, changed=True), call(3, "ask_user", {"question": "A?"}), call(4, "pay", {"h": "H1"}, changed=True)]
    return calls, [ask(["budget"], 0), confirm("A", 4)]


def test_world_nodes_only_with_dependencies_through_user_nodes():
    done = progress(travel_task(), [], [], TOOLS)
    assert [g.id for g in done.nodes] == ["s0", "s1", "hold", "pay"]
    assert {g.id: g.depends_on for g in done.nodes}["pay"] == ["hold"]  # through the confirmation
    chain = [GoldCall(id="a", tool="search", arguments={}), GoldCall(id="b", tool="ask_user", arguments={}, depends_on=["a"]),
             GoldCall(id="c", tool="search", arguments={}, depends_on=["b"])]
    assert project(chain, {"a", "c"})[1].depends_on == ["a"]


def test_the_oracle_scores_one_and_asking_is_not_progress():
    calls, events = oracle_calls()
    dq = decision_quality(travel_task(), {"calls": calls, "events": events}, TOOLS)
    assert dq["coverage"] == dq["parallelism"] == dq["efficiency"] == 1.0
    # asking in turns of their own costs neither parallelism nor efficiency (clarification judges questions)
    extra = [call(5, "ask_user", {"question": "anything else?"})]
    dq = decision_quality(travel_task(), {"calls": calls + extra, "events": events + [ask([], 5)]}, TOOLS)
    assert dq["parallelism"] == dq["efficiency"] == 1.0


def test_a_write_node_is_matched_whatever_it_names():
    calls, events = oracle_calls()
    calls[3] = call(2, "hold", {"f": "B"}, changed=True)  # another flight: priority and success judge that
    assert progress(travel_task(), calls, events, TOOLS).coverage == 1.0
    calls[3] = {**calls[3], "status": "tool_error"}  # a hold the world refused achieves nothing
    assert progress(travel_task(), calls, events, TOOLS).coverage == pytest.approx(3 / 4)


def test_a_repeat_of_a_matched_node_counts_as_unmatched():
    calls, events = oracle_calls()
    calls.insert(2, call(1, "search", {"q": "d1"}))
    eff, redundant = efficiency(travel_task(), calls, TOOLS, [ask(["budget"], 0), confirm("A", 5)])
    assert (eff, redundant) == (pytest.approx(4 / 5), 1)


def test_stopping_halfway_scores_at_most_its_coverage():
    calls, events = oracle_calls()
    half = calls[:3]  # asked and searched, then stopped
    dq = decision_quality(travel_task(), {"calls": half, "events": events[:1]}, TOOLS)
    assert dq["coverage"] == 0.5
    assert dq["efficiency"] == 0.5 and dq["parallelism"] == 0.5  # precise and fast, but half done


def test_monotone_along_prefixes_of_the_plan():
    calls, events = oracle_calls()
    seen = []
    for k in range(len(calls) + 1):
        dq = decision_quality(travel_task(), {"calls": calls[:k], "events": [e for e in events if e["call"] < k]}, TOOLS)
        seen.append((dq["coverage"], dq["efficiency"], dq["parallelism"]))
    for before, after in zip(seen, seen[1:]):
        assert all(b <= a for b, a in zip(before, after)), seen
    assert seen[0] == (0.0, 0.0, 0.0) and seen[-1] == (1.0, 1.0, 1.0)


def test_nodes_behind_a_hidden_slot_never_asked_are_clarifications_to_judge():
    # the searches need the dates, which only the user knows
    gold = [GoldCall(id="ask", tool="ask_user", arguments={"question": "dates?"}, match="ask"),
            GoldCall(id="ev", tool="search", arguments={"q": "events"}),
            GoldCall(id="s0", tool="search", arguments={"q": "d1", "to": "X"}, depends_on=["ask"]),
            GoldCall(id="hold", tool="hold", arguments={"f": "A"}, depends_on=["s0", "ev"])]
    t = task(gold=gold, hidden_slots={"dates": ["d1"]})
    guess = [call(0, "search", {"q": "events"}), call(0, "search", {"q": "d9", "to": "X"})]
    done = progress(t, guess, [], TOOLS)
    # judged on the events look-up only; the search on a guessed date is left to clarification
    assert done.expected == {"ev"} and done.guesses == [1] and done.coverage == 1.0
    assert efficiency(t, guess, TOOLS, [])[0] == 1.0
    # a lucky guess still counts as progress, and once asked, the searches are judged like any other
    assert progress(t, [call(0, "search", {"q": "d1", "to": "X"})], [], TOOLS).expected == {"ev", "s0"}
    asked = [call(0, "ask_user", {"question": "dates?"}), *guess]
    done = progress(t, asked, [ask(["dates"], 0)], TOOLS)
    assert done.expected == {"ev", "s0", "hold"} and done.guesses == [] and done.coverage == pytest.approx(1 / 3)
    # a plan that hinges entirely on the unasked slot gives the episode nothing to judge: null, not 0
    only = task(gold=[gold[0], gold[2]], hidden_slots={"dates": ["d1"]})
    assert efficiency(only, [], TOOLS, []) == (None, 0)
    assert decision_quality(only, {"calls": [], "events": []}, TOOLS)["dq"] == 0.0  # clarification is 0


def test_a_refused_confirmation_ends_what_the_plan_can_judge():
    calls, _ = oracle_calls()
    calls[3] = call(2, "hold", {"f": "B"}, changed=True)
    refused = calls[:5] + [call(4, "release", {"h": "H1"}, changed=True), call(5, "search", {"q": "zz"})]
    events = [ask(["budget"], 0), confirm("B", 4, "no")]
    done = progress(travel_task(), refused, events, TOOLS)
    assert "pay" not in done.expected and done.counted == [1, 2, 3]  # nothing after the refusal is judged
    assert done.coverage == 1.0
    # a bogus confirmation at the start earns nothing: the nodes before any confirmation are still expected
    early = [call(0, "ask_user", {"question": "Z?"}), call(1, "search", {"q": "d1"})]
    done = progress(travel_task(), early, [confirm("Z", 0, "no")], TOOLS)
    assert done.expected == {"s0", "s1", "hold"} and done.coverage == 0.0


def test_parallelism_is_progress_aware():
    t = task(gold=[GoldCall(id=f"s{i}", tool="search", arguments={"q": str(i)}) for i in range(4)])
    one = [call(0, "search", {"q": "0"})]
    assert parallelism(t, one, [], TOOLS) == (0.25, 0)  # one turn for a one-turn plan, but a quarter of it
    nothing_useful = [call(0, "search", {"q": "zz"}), call(0, "search", {"q": "yy"})]
    assert parallelism(t, nothing_useful, [], TOOLS) == (0.0, 0)
    assert parallelism(t, [], [], TOOLS) == (0.0, 0)
