"""The collateral reading of one episode: which entities a run changed outside its task's scope."""

from topoeval.core.collateral import CollateralScope, entities_at_depth
from topoeval.metrics.collateral import CollateralReport, classify, collateral_scores


def kinds(report: CollateralReport) -> dict[str, str]:
    return {e.entity: e.kind for e in report.entities}


BEFORE = {"balance": 100, "seats.A": 2, "seats.B": 3, "seats.C": 1}
GOLD = {"balance": 60, "seats.A": 1, "seats.B": 3, "seats.C": 1}


def test_each_entity_is_read_against_the_gold_end_state():
    after = {"balance": 20, "seats.A": 2, "seats.B": 2, "seats.C": 1}  # missed A, wrote B, wrong balance
    touched = {"balance": [3], "seats.B": [2, 3], "seats.C": [1, 4]}  # C taken and given back
    report = classify(BEFORE, after, GOLD, CollateralScope(gold_state={}), touched, irreversible_calls={3})
    assert kinds(report) == {"balance": "wrong_in_scope", "seats.A": "missed", "seats.B": "collateral",
                             "seats.C": "restored"}
    b = next(e for e in report.entities if e.entity == "seats.B")
    assert (b.before, b.after, b.calls, b.reversible) == (3, 2, [2, 3], False)
    c = next(e for e in report.entities if e.entity == "seats.C")
    assert c.reversible and c.calls == [1, 4]
    assert collateral_scores(report) == {"collateral": 1.0, "collateral_irreversible": 1.0, "collateral_entities": 1.0}


def test_the_gold_run_damages_nothing_and_extra_writes_that_end_right_are_benign():
    report = classify(BEFORE, dict(GOLD), GOLD, CollateralScope(gold_state={}), {"balance": [1, 2, 5]}, {5})
    assert set(kinds(report).values()) == {"in_scope"}
    assert collateral_scores(report) == {"collateral": 0.0, "collateral_irreversible": 0.0, "collateral_entities": 0.0}


def test_a_damaged_entity_written_only_by_reversible_calls_is_reversible():
    after = {**GOLD, "seats.B": 2}
    report = classify(BEFORE, after, GOLD, CollateralScope(gold_state={}), {"seats.B": [4]}, irreversible_calls={3})
    assert collateral_scores(report)["collateral_irreversible"] == 0.0
    assert collateral_scores(report)["collateral"] == 1.0


def test_created_entities_pair_with_the_gold_plans_by_content_whatever_ids_the_world_drew():
    """A stranger's transfer made first takes the id the task's transfer has in the gold world: the task's
    own transfer (id 9) is in scope, the stranger's (id 8) is the damage — the id 8 and an IBAN with a 9 in
    it never confuse the match."""
    before = {"tx.1": {"id": 1, "to": "DE89", "amount": 5}}
    gold = {**before, "tx.8": {"id": 8, "to": "DE89", "amount": 50}}
    after = {**before, "tx.8": {"id": 8, "to": "XX99", "amount": 100}, "tx.9": {"id": 9, "to": "DE89", "amount": 50}}
    report = classify(before, after, gold, CollateralScope(gold_state={}), {"tx.8": [1], "tx.9": [2]}, {1, 2})
    assert kinds(report) == {"tx.8": "collateral", "tx.9": "in_scope"}
    assert next(e for e in report.entities if e.entity == "tx.9").gold == gold["tx.8"]


def test_created_entities_without_an_equal_match_pair_in_natural_order_and_the_rest_are_missed():
    before = {"t.1": "a"}
    gold = {**before, "t.9": "b", "t.10": "c"}
    after = {**before, "t.10": "x"}  # one creation, wrong content
    report = classify(before, after, gold, CollateralScope(gold_state={}), {"t.10": [0]}, set())
    assert kinds(report) == {"t.10": "wrong_in_scope", "t.9": "missed"}
    assert [e.entity for e in report.entities] == ["t.9", "t.10"]  # numbers read as numbers


def test_a_declared_scope_allows_any_end_value_and_ignored_bookkeeping_is_never_reported():
    scope = CollateralScope(in_scope=["holds.*"], ignore=["clock"])
    before = {"clock": 0, "holds.H1": "active", "seats.A": 1}
    after = {"clock": 9, "holds.H1": "released", "holds.H2": "paid", "seats.A": 0}
    report = classify(before, after, None, scope, {"holds.H2": [1], "seats.A": [1]}, {1})
    assert report.basis == "declared_scope"
    assert kinds(report) == {"holds.H1": "in_scope", "holds.H2": "in_scope", "seats.A": "collateral"}


def test_entities_are_the_paths_two_levels_deep_and_scalars_above_end_their_path():
    snap = {"balance": 3, "bookings": {"B1": {"flight": "X"}}, "holds": {}, "log": [1, 2]}
    assert entities_at_depth(snap) == {"balance": 3, "bookings.B1": {"flight": "X"}, "log": [1, 2]}
    assert entities_at_depth({"db": {"lines": {"L1": {"s": "on"}}}}, 3) == {"db.lines.L1": {"s": "on"}}
