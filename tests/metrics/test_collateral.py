"""topoeval.metrics.collateral: every entity a run or its gold plan changed falls in exactly one of the five kinds
(the module docstring), with its calls, reversibility and values; created entities are matched to the gold plan's
(equal but for the id first, then the same name, then in natural order); and the scores count only damage (#61:
each field of each entity is checked by value, so a wrong branch, pairing or order fails here)."""

from topoeval.core.collateral import CollateralScope
from topoeval.metrics.collateral import (
    CollateralReport,
    EntityChange,
    _natural,
    _without_id,
    changed_entities,
    classify,
    collateral_scores,
)


def _rows(report):
    return [(e.entity, e.kind, e.reversible, e.calls, e.before, e.after, e.gold) for e in report.entities]


def test_changed_entities_are_those_added_removed_or_changed_and_a_null_value_is_a_value():
    before = {"same": 1, "changed": 1, "removed": 1, "was_null": None}
    after = {"same": 1, "changed": 2, "added": 1, "now_null": None}
    assert changed_entities(before, after) == {"changed", "removed", "added", "was_null", "now_null"}
    assert changed_entities({}, {}) == set()


def test_each_entity_of_a_gold_plan_run_falls_in_its_kind_with_its_calls_and_values():
    before = {"balance": 100, "seats.A": 2, "seats.B": 4, "seats.C": 5, "loyalty.U1": 0, "clock.now": 1,
              "holds.H0": "free", "holds.H2": "free", "notes.N0": "x"}
    booking = {"id": "B1", "flight": "A", "price": 10}
    gold = {**before, "balance": 90, "seats.A": 1, "loyalty.U1": 10, "bookings.B1": booking,
            "tickets.T1": {"id": "T1"}, "clock.now": 2, "clock.t2": 0, "notes.N0": "y"}
    after = {**before, "balance": 80, "seats.A": 1, "seats.B": 3, "clock.now": 9, "holds.H0": "held",
             "bookings.B7": {"id": "B7", "flight": "A", "price": 10}, "holds.H9": {"flight": "B"}, "notes.N1": "hi"}
    touched = {"balance": [3], "seats.A": [1], "seats.B": [2, 1], "seats.C": [2], "bookings.B7": [3],
               "holds.H9": [1], "holds.H0": [1], "holds.H2": [1], "notes.N1": [4], "clock.now": [1]}
    scope = CollateralScope(gold_state={}, in_scope=["holds.*"], ignore=["clock.*"])
    report = classify(before, after, gold, scope, touched, irreversible_calls={3})
    assert report.basis == "gold_state"
    assert _rows(report) == [
        # the gold plan changes it and the run left it otherwise; written by an irreversible call
        ("balance", "wrong_in_scope", False, [3], 100, 80, 90),
        # created by the run, equal to the gold plan's booking but for the id the world drew
        ("bookings.B7", "in_scope", False, [3], None, {"id": "B7", "flight": "A", "price": 10}, booking),
        # declared in scope: any end value is the task's to judge, created or not
        ("holds.H0", "in_scope", True, [1], "free", "held", "free"),
        ("holds.H2", "in_scope", True, [1], "free", "free", "free"),  # written and put back
        ("holds.H9", "in_scope", True, [1], None, {"flight": "B"}, None),
        ("loyalty.U1", "missed", True, [], 0, 0, 10),
        # the gold plan changed a note that existed: missed, and no match for one the run created (outside the scope)
        ("notes.N0", "missed", True, [], "x", "x", "y"),
        ("notes.N1", "collateral", True, [4], None, "hi", None),
        ("seats.A", "in_scope", True, [1], 2, 1, 1),
        # outside the scope: no gold value is kept (the reading records none for collateral or restored entities)
        ("seats.B", "collateral", True, [1, 2], 4, 3, None),
        ("seats.C", "restored", True, [2], 5, 5, None),  # written, and back to its start value
        ("tickets.T1", "missed", True, [], None, None, {"id": "T1"}),  # the gold plan created it, the run did not
    ]  # clock.* is bookkeeping: never reported, the gold plan's clock.t2 neither
    assert collateral_scores(report) == {"collateral": 1.0, "collateral_irreversible": 0.0,
                                         "collateral_entities": 2.0}


def test_created_entities_pair_equal_but_for_the_id_first_then_by_name_then_in_natural_order():
    gold = {"t.9": {"n": 1}, "t.10": {"n": 2, "id": "10"}, "t.20": {"n": 7}, "u.1": {"v": 1}, "u.2": {"v": 3}}
    after = {"t.8": {"n": 3}, "t.11": {"n": 5}, "t.12": {"n": 2, "id": "12"}, "u.2": {"v": 4}}
    report = classify({}, after, gold, CollateralScope(gold_state={}), {}, set())
    assert _rows(report) == [
        # t.12 equals t.10 but for its id; then, in natural order (t.8 before t.11, t.9 before t.20), the rest
        ("t.8", "wrong_in_scope", True, [], None, {"n": 3}, {"n": 1}),
        ("t.11", "wrong_in_scope", True, [], None, {"n": 5}, {"n": 7}),
        ("t.12", "in_scope", True, [], None, {"n": 2, "id": "12"}, {"n": 2, "id": "10"}),
        ("u.1", "missed", True, [], None, None, {"v": 1}),
        ("u.2", "wrong_in_scope", True, [], None, {"v": 4}, {"v": 3}),  # the same name, though u.1 comes first
    ]
    assert collateral_scores(report) == {"collateral": 0.0, "collateral_irreversible": 0.0,
                                         "collateral_entities": 0.0}


def test_with_only_declared_patterns_every_declared_entity_is_in_scope_and_the_rest_is_damage():
    before = {"a.1": 1, "a.2": 2, "b.1": 1, "b.2": 1}
    after = {"a.1": 5, "a.2": 2, "a.3": 1, "b.1": 2, "b.2": 1}
    touched = {"a.2": [0], "b.1": [1], "a.1": [1]}
    report = classify(before, after, None, CollateralScope(in_scope=["a.*"]), touched, irreversible_calls={1})
    assert report.basis == "declared_scope"
    assert _rows(report) == [
        ("a.1", "in_scope", False, [1], 1, 5, None),
        ("a.2", "in_scope", True, [0], 2, 2, None),  # a declared entity written and put back
        ("a.3", "in_scope", True, [], None, 1, None),
        ("b.1", "collateral", False, [1], 1, 2, None),
    ]  # b.2, never touched nor changed, is not an entity of the reading
    assert collateral_scores(report) == {"collateral": 1.0, "collateral_irreversible": 1.0,
                                         "collateral_entities": 1.0}


def test_an_entity_outside_the_scope_written_and_put_back_is_restored_never_damage():
    before, gold = {"x.1": 1}, {"x.1": 1}
    report = classify(before, dict(before), gold, CollateralScope(gold_state={}), {"x.1": [0]}, set())
    assert _rows(report) == [("x.1", "restored", True, [0], 1, 1, None)]
    assert collateral_scores(report)["collateral"] == 0.0


def test_the_scores_count_only_damage_and_are_null_without_a_reading():
    assert collateral_scores(None) == {"collateral": None, "collateral_irreversible": None,
                                       "collateral_entities": None}

    def entity(name, kind, reversible=True):
        return EntityChange(entity=name, kind=kind, reversible=reversible)

    report = CollateralReport(basis="gold_state", entities=[
        entity("a", "collateral"), entity("b", "in_scope", False), entity("c", "restored", False),
        entity("d", "wrong_in_scope", False), entity("e", "missed", False)])
    assert collateral_scores(report) == {"collateral": 1.0, "collateral_irreversible": 0.0,
                                         "collateral_entities": 1.0}
    assert [e.entity for e in report.of_kind("restored")] == ["c"]


def test_an_id_is_blanked_only_where_a_whole_scalar_field_is_it():
    value = {"id": "7", "n": 7, "flag": True, "ref": "x7", "items": [{"id": "7"}, 8]}
    assert _without_id(value, "7") == {"id": None, "n": None, "flag": True, "ref": "x7", "items": [{"id": None}, 8]}
    assert _without_id(True, "True") is True


def test_names_sort_with_their_numbers_read_as_numbers():
    names = ["t.10", "t.9", "t.a", "s.2.b", "t.1"]
    assert sorted(names, key=_natural) == ["s.2.b", "t.1", "t.9", "t.10", "t.a"]


def test_created_entities_pair_only_within_their_collection_the_name_without_its_last_part():
    gold = {"a.G1": {"v": 2}, "b.G1": {"v": 1}, "db.y.G1": {"v": 0}, "loan": {"v": 9}}
    after = {"a.X1": {"v": 1}, "db.x.N1": {"v": 0}, "credit": {"v": 9}}
    report = classify({}, after, gold, CollateralScope(gold_state={}), {}, set())
    assert [(e.entity, e.kind, e.gold) for e in report.entities] == [
        ("a.X1", "wrong_in_scope", {"v": 2}),  # equal to b.G1, but b is another collection
        ("b.G1", "missed", {"v": 1}),
        ("credit", "in_scope", {"v": 9}),  # two top-level entities: one collection (the root)
        ("db.x.N1", "collateral", None),  # db.x is not db.y
        ("db.y.G1", "missed", {"v": 0}),
    ]


def test_the_id_blanked_is_the_last_part_of_a_deep_name():
    gold = {"db.bookings.B1": {"id": "B1", "seat": "2A"}}
    after = {"db.bookings.B7": {"id": "B7", "seat": "2A"}}
    report = classify({}, after, gold, CollateralScope(gold_state={}), {}, set())
    assert [(e.entity, e.kind) for e in report.entities] == [("db.bookings.B7", "in_scope")]


def test_a_removed_entity_is_not_one_set_to_null():
    before = {"x.1": 1, "x.2": 1, "x.3": 1}
    gold = {"x.1": None, "x.3": None}  # the gold plan nulls x.1 and x.3 and removes x.2
    after = {"x.2": None, "x.3": None}  # the run removes x.1, nulls x.2 and x.3
    report = classify(before, after, gold, CollateralScope(gold_state={}), {}, set())
    assert [(e.entity, e.kind) for e in report.entities] == [
        ("x.1", "wrong_in_scope"), ("x.2", "wrong_in_scope"), ("x.3", "in_scope")]
