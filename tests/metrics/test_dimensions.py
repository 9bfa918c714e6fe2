"""Decision-quality dimensions on hand-built trajectories, edge cases included."""

import pytest

from topoeval.metrics.dimensions import clarification, decision_quality, efficiency, parallelism, priority, risk
from topoeval.core.suite import Effect, GoldCall, Task, ToolSpec

TOOLS = {
    "search": ToolSpec(name="search", description="", effect=Effect.read, idempotent=True, parallel_safe=True),
    "ask_user": ToolSpec(name="ask_user", description="", effect=Effect.read, idempotent=False, parallel_safe=True, user_channel=True),
    "hold": ToolSpec(name="hold", description="", effect=Effect.write, idempotent=False, parallel_safe=False),
    "pay": ToolSpec(name="pay", description="", effect=Effect.irreversible, idempotent=False, parallel_safe=False, needs_confirmation=True),
    "cancel": ToolSpec(name="cancel", description="", effect=Effect.irreversible, idempotent=False, parallel_safe=False),
}


def task(**kw):
    base = dict(id="t/test/0", suite="s", split="test", index=0, family="f", prompt="p")
    return Task(**{**base, **kw})


def call(turn, name, args=None, status="ok", changed=False):
    return {"turn": turn, "name": name, "arguments": args or {}, "raw_arguments": "{}", "status": status,
            "state_changed": changed}


def ask(slots, at):
    return {"type": "ask", "slots": slots, "call": at}


def confirm(obj, at, answer="yes"):
    return {"type": "confirm", "object": obj, "answer": answer, "call": at}


def commit(obj, at, tool="pay"):
    return {"type": "commit", "tool": tool, "object": obj, "call": at}


# -- clarification ---------------------------------------------------------------------------
def test_clarification_null_without_hidden_slots_but_counts_over_asks():
    assert clarification(task(), []) == (None, 0)
    assert clarification(task(), [ask(["budget"], 0), ask([], 1)]) == (None, 2)


def test_clarification_recall_times_non_over_asking():
    t = task(hidden_slots={"budget": 400, "airline": "X"}, given_slots={"dates": ["d"]})
    assert clarification(t, [ask(["budget", "airline"], 0)]) == (1.0, 0)
    assert clarification(t, [ask(["budget"], 0)]) == (0.5, 0)
    # one of three questions over-asks (a given slot): 1.0 x (1 - 1/3)
    score, over = clarification(t, [ask(["budget"], 0), ask(["dates"], 1), ask(["airline"], 2)])
    assert over == 1 and score == pytest.approx(2 / 3)
    # repeating an answered slot and an unmatched question are over-asks too
    score, over = clarification(t, [ask(["budget", "airline"], 0), ask(["budget"], 1), ask([], 2)])
    assert over == 2 and score == pytest.approx(1 / 3)
    assert clarification(t, []) == (0.0, 0)  # never asked


# -- priority --------------------------------------------------------------------------------
OPTIONS = {
    "A": {"date": True, "budget": False, "airline": False},   # lexicographic optimum for date > budget > airline
    "B": {"date": False, "budget": True, "airline": True},    # flat optimum (2 of 3)
    "C": {"date": True, "budget": False, "airline": True},
}


def test_priority_applies_only_to_trade_offs_with_a_commitment():
    assert priority(task(options=OPTIONS, priority=["date", "budget", "airline"]), [commit("A", 0)]) is None
    t = task(options=OPTIONS, priority=["date", "budget", "airline"], trade_off=True)
    assert priority(t, []) is None


def test_priority_levels_matched_before_the_first_miss():
    t = task(options=OPTIONS, priority=["date", "airline", "budget"], trade_off=True)
    assert priority(t, [commit("C", 0)]) == 1.0          # C = (T, T, F) is the optimum
    assert priority(t, [commit("A", 0)]) == pytest.approx(1 / 3)   # (T, F, F): first level only
    assert priority(t, [commit("B", 0)]) == 0.0          # (F, T, T): misses the top level


def test_priority_without_an_order_rewards_the_most_wishes_met():
    t = task(options=OPTIONS, priority=[], trade_off=True)  # flat ordering
    assert priority(t, [commit("B", 0)]) == 1.0 and priority(t, [commit("C", 0)]) == 1.0  # 2 of 3 each
    assert priority(t, [commit("A", 0)]) == pytest.approx(1 / 2)  # 1 of the best 2


def test_reversible_commits_count_for_priority_not_risk():
    t = task(options=OPTIONS, priority=["date", "budget", "airline"], trade_off=True)
    undoable = {**commit("C", 0), "irreversible": False}
    assert priority(t, [undoable]) == 1.0
    assert risk(t, [undoable], {}) == (None, 0)


# -- risk ------------------------------------------------------------------------------------
def test_risk_null_without_commitment():
    assert risk(task(), [ask(["budget"], 0)], TOOLS) == (None, 0)


def test_risk_needs_valid_object_resolved_slots_and_confirmation():
    t = task(hidden_slots={"budget": 1}, commit_targets={"pay": ["A", "B"]})
    safe = [ask(["budget"], 0), confirm("A", 2), commit("A", 3)]
    assert risk(t, safe, TOOLS) == (1.0, 0)
    assert risk(t, [ask(["budget"], 0), commit("A", 3)], TOOLS) == (0.0, 1)                  # no confirmation
    assert risk(t, [ask(["budget"], 0), confirm("A", 1, "no"), commit("A", 3)], TOOLS) == (0.0, 1)  # refused
    assert risk(t, [ask(["budget"], 0), confirm("B", 1), commit("A", 3)], TOOLS) == (0.0, 1)  # other object
    assert risk(t, [ask(["budget"], 0), confirm("Z", 1), commit("Z", 3)], TOOLS) == (0.0, 1)  # invalid object
    assert risk(t, [commit("A", 0), confirm("A", 1), ask(["budget"], 2)], TOOLS) == (0.0, 1)  # all too late
    # the user's yes to this very object settles the hidden slots too
    assert risk(t, [confirm("A", 1), commit("A", 2)], TOOLS) == (1.0, 0)
    # an irreversible tool without needs_confirmation and without valid targets is never safe
    assert risk(t, safe + [commit("A", 5, tool="cancel")], TOOLS) == (0.5, 1)


# -- parallelism -----------------------------------------------------------------------------
PAR_GOLD = [GoldCall(id="a", tool="search", arguments={"q": "x"}), GoldCall(id="b", tool="search", arguments={"q": "y"}),
            GoldCall(id="c", tool="hold", arguments={"f": "1"}, depends_on=["a", "b"])]


def test_parallelism_null_for_depth_only_dags_but_violations_counted():
    chain = [GoldCall(id="h0", tool="search", arguments={"q": "x"}),
             GoldCall(id="h1", tool="search", arguments={"q": "y"}, depends_on=["h0"])]
    assert parallelism(task(gold=chain), [call(0, "search", {"q": "x"}), call(1, "search", {"q": "y"})], []) == (None, 0)
    # the second hop guessed in the same turn as the first: a serial violation
    assert parallelism(task(gold=chain), [call(0, "search", {"q": "x"}), call(0, "search", {"q": "y"})], []) == (None, 1)
    # the second hop before the first one was ever called
    assert parallelism(task(gold=chain), [call(0, "search", {"q": "Y "})], []) == (None, 1)
    single = [GoldCall(id="g", tool="search", arguments={"q": "x"})]
    assert parallelism(task(gold=single), [call(0, "search", {"q": "x"})], []) == (None, 0)


def test_parallelism_critical_path_over_turns():
    t = task(gold=PAR_GOLD)
    parallel = [call(0, "search", {"q": "x"}), call(0, "search", {"q": "y"}), call(1, "hold", {"f": "1"})]
    serial = [call(0, "search", {"q": "x"}), call(1, "search", {"q": "y"}), call(2, "hold", {"f": "1"})]
    assert parallelism(t, parallel, []) == (1.0, 0)
    assert parallelism(t, serial, []) == (pytest.approx(2 / 3), 0)
    assert parallelism(t, [], []) == (0.0, 0)
    rushed = [call(0, "search", {"q": "x"}), call(0, "search", {"q": "y"}), call(0, "hold", {"f": "1"})]
    assert parallelism(t, rushed, []) == (1.0, 1)  # fast, but the hold could not know the searches


def test_parallelism_on_a_conversation_counts_only_the_instructions_that_allow_it():
    """Instruction 0 needs one call (no choice), instruction 1 two independent ones: serial is
    judged on instruction 1 alone (1 path level / 2 turns), not diluted to 2/3 by instruction 0."""
    gold = [GoldCall(id="a", tool="search", arguments={"q": "x"}, instruction=0),
            GoldCall(id="b", tool="search", arguments={"q": "y"}, instruction=1),
            GoldCall(id="c", tool="search", arguments={"q": "z"}, instruction=1)]
    t = task(gold=gold)
    events = [{"type": "instruction", "index": 1, "turn": 2}]  # turn 1 handed instruction 0 back
    parallel = [call(0, "search", {"q": "x"}), call(2, "search", {"q": "y"}), call(2, "search", {"q": "z"})]
    serial = [call(0, "search", {"q": "x"}), call(2, "search", {"q": "y"}), call(3, "search", {"q": "z"})]
    assert parallelism(t, parallel, events) == (1.0, 0)
    assert parallelism(t, serial, events) == (pytest.approx(1 / 2), 0)
    # stopping after instruction 0: a third of the plan, no turn of the wide instruction used
    assert parallelism(t, serial[:1], events[:0]) == (0.0, 0)
    # a one-instruction task keeps the plain ratio
    one = task(gold=[g.model_copy(update={"instruction": 0}) for g in gold])
    assert parallelism(one, [call(0, "search", {"q": "x"}), call(0, "search", {"q": "y"}), call(1, "search", {"q": "z"})],
                       []) == (pytest.approx(1 / 2), 0)


# -- efficiency ------------------------------------------------------------------------------
def test_efficiency_is_coverage_times_precision_and_counts_redundancy():
    t = task(gold=PAR_GOLD)
    assert efficiency(task(), [call(0, "search")], TOOLS) == (None, 0)
    assert efficiency(t, [], TOOLS) == (0.0, 0)
    twice = [call(0, "search", {"q": "x"}), call(0, "search", {"q": "x"}), call(1, "search", {"q": "y"}),
             call(2, "hold", {"f": "1"}, changed=True), call(3, "search", {"q": "x"})]
    # every node covered, 3 of 5 calls achieved one; the second identical search is redundant, the one
    # after the state changed is not (but it achieves nothing either)
    assert efficiency(t, twice, TOOLS) == (pytest.approx(3 / 5), 1)
    questions = [call(0, "ask_user", {"question": "q"}), call(1, "ask_user", {"question": "q"})]
    assert efficiency(t, questions, TOOLS) == (0.0, 0)  # user questions are neither world reads nor progress
    # one useful call of three needed: precise, but a third of the way (0.1 would have said 1.0, capped)
    assert efficiency(t, [call(0, "search", {"q": "x"})], TOOLS) == (pytest.approx(1 / 3), 0)


def test_dq_is_mean_of_non_null_dimensions():
    t = task(gold=PAR_GOLD, hidden_slots={"budget": 1})
    record = {"calls": [call(0, "search", {"q": "x"}), call(0, "search", {"q": "y"}), call(1, "hold", {"f": "1"})],
              "events": []}
    dq = decision_quality(t, record, TOOLS)
    assert dq["clarification"] == 0.0 and dq["priority"] is None and dq["risk"] is None
    assert dq["parallelism"] == 1.0 and dq["efficiency"] == 1.0
    assert dq["dq"] == pytest.approx(2 / 3)
    assert decision_quality(task(), {"calls": [], "events": []}, TOOLS)["dq"] is None
