"""The collapse section entry by entry, every field and every null's reason (mutation testing found the
averages over several ID topologies, the tie rule's noise and most reasons unchecked: docs/development.md).
The numbers are binary fractions, so every mean, difference and ratio is exact."""

from topoeval.analysis.collapse import build_collapse


def cells(roles: dict[str, str], spec: dict[tuple[str, str], dict[str, object]]) -> list[dict]:
    """Cells from ``{(model, baseline): {topology: success | (success, se) | (success, se, {dim: mean})}}``."""
    out = []
    for (model, baseline), by_topology in spec.items():
        for topology, value in by_topology.items():
            success, se, dims = (*value, {}) if isinstance(value, tuple) and len(value) == 2 else (
                value if isinstance(value, tuple) else (value, 0.0, {}))
            metrics = {"success": {"mean": success, "std": 0.0, "se": se, "n": 16}}
            metrics.update({d: {"mean": v, "std": 0.0, "se": 0.0, "n": 16} for d, v in dims.items()})
            out.append({"model": model, "baseline": baseline, "topology": topology, "role": roles[topology],
                        "metrics": metrics})
    return out


NEITHER = "{} applies on neither side"
ID_ONLY = "{} applies on one side only: no task of this OOD topology gives it a meaning"
OOD_ONLY = "{} applies on one side only: no task of the ID topology gives it a meaning"
NO_BOTH = "no dimension applies on both sides"
NONE_HERE = "no decision-quality dimension applies on this topology's tasks"
QUALITY = ("dq", "clarification", "priority", "risk", "parallelism", "efficiency")
EMPTY = {**dict.fromkeys(QUALITY), "falls_most": None, "weakest": None}


def nothing_applies(topology: str) -> dict[str, str]:
    return {**{f"dimension_collapse.{topology}.{d}": NEITHER.format(d) for d in QUALITY},
            f"dimension_collapse.{topology}.falls_most": NO_BOTH, f"dimension_collapse.{topology}.weakest": NONE_HERE}


ROLES = {"a": "id", "a2": "id", "b": "ood", "c": "ood"}
NO_CELL = "no scored episode on this topology (all in error, or none run)"
NEEDS = "a success this needs (zero-shot S_id, S_ood, or this baseline's S_ood) is null"


def test_every_field_and_reason_of_models_with_two_id_topologies_a_base_and_a_few_shot_baseline():
    spec = {
        ("m", "0-shot"): {"a": (0.75, 0.0625, {"dq": 0.875, "clarification": 0.5, "efficiency": 0.875}),
                          "a2": (0.25, 0.0, {"dq": 0.625, "efficiency": 0.625}),
                          "b": (0.25, 0.0, {"dq": 0.5, "clarification": 0.125, "efficiency": 0.625, "risk": 0.25}),
                          "c": None},
        ("m", "2-shot"): {"a": 0.75, "a2": 0.25, "b": 0.5, "c": None},
        ("base", "0-shot"): {"a": 0.5, "a2": 0.5, "b": 0.125, "c": 0.25},
    }
    zero, two, base = build_collapse(cells(ROLES, spec), base_model="base")
    c_null = {"S_ood.c": NO_CELL, "gap.c": "S_ood.c is null", "transfer_ratio.c": "S_ood.c is null"}
    assert zero == {
        "model": "m", "baseline": "0-shot", "S_id": 0.5, "S_ood": {"b": 0.25, "c": None},
        "transfer_ratio": {"b": 0.5, "c": None}, "gap": {"b": 0.25, "c": None},
        "dimension_collapse": {
            # the ID side is the mean over both ID topologies of those where a dimension applies
            "b": {"dq": 0.25, "clarification": 0.375, "priority": None, "risk": None, "parallelism": None,
                  "efficiency": 0.125, "falls_most": "clarification",  # the larger drop, not the last name
                  "weakest": {"dimension": "clarification", "mean": 0.125}},
            "c": EMPTY},
        "nulls": {
            **c_null,
            "dimension_collapse.b.priority": NEITHER.format("priority"),
            "dimension_collapse.b.risk": OOD_ONLY.format("risk"),
            "dimension_collapse.b.parallelism": NEITHER.format("parallelism"),
            **{f"dimension_collapse.c.{d}": ID_ONLY.format(d) for d in ("dq", "clarification", "efficiency")},
            **{f"dimension_collapse.c.{d}": NEITHER.format(d) for d in ("priority", "risk", "parallelism")},
            "dimension_collapse.c.falls_most": NO_BOTH, "dimension_collapse.c.weakest": NONE_HERE},
        "vs_base": {"b": 0.125, "c": None},
    }
    assert two == {
        "model": "m", "baseline": "2-shot", "S_id": 0.5, "S_ood": {"b": 0.5, "c": None},
        "transfer_ratio": {"b": 1.0, "c": None}, "gap": {"b": 0.0, "c": None},
        "dimension_collapse": {"b": EMPTY, "c": EMPTY},
        "nulls": {**c_null, **nothing_applies("b"), **nothing_applies("c"),
                  "fewshot_recovery.c": NEEDS},
        "fewshot_recovery": {"b": 1.0, "c": None},  # 0.25 of the zero-shot gap of 0.25
    }  # no vs_base: the base ran no 2-shot baseline
    assert base == {
        "model": "base", "baseline": "0-shot", "S_id": 0.5, "S_ood": {"b": 0.125, "c": 0.25},
        "transfer_ratio": {"b": 0.25, "c": 0.5}, "gap": {"b": 0.375, "c": 0.25},
        "dimension_collapse": {"b": EMPTY, "c": EMPTY}, "nulls": {**nothing_applies("b"), **nothing_applies("c")},
    }  # the base itself has no vs_base


def test_a_null_s_id_makes_the_gap_and_the_ratio_null_with_that_reason():
    entry, = build_collapse(cells({"a": "id", "b": "ood"}, {("m", "0-shot"): {"a": None, "b": 0.5}}))
    assert entry["S_id"] is None and entry["gap"] == {"b": None} and entry["transfer_ratio"] == {"b": None}
    why = "S_id is null: no scored episode on the ID topology"
    assert entry["nulls"]["gap.b"] == entry["nulls"]["transfer_ratio.b"] == why and "S_ood.b" not in entry["nulls"]


def test_s_id_within_the_noise_of_its_cells_gives_no_ratio():
    entry, = build_collapse(cells({"a": "id", "b": "ood"}, {("m", "0-shot"): {"a": (0.0625, 0.0625), "b": 0.25}}))
    assert entry["transfer_ratio"] == {"b": None} and entry["gap"] == {"b": -0.1875}
    assert entry["nulls"]["transfer_ratio.b"] == ("S_id 0.0625 ties with 0 under the tie rule (margin 0.125): the "
                                                  "ratio S_ood / S_id is undefined")


def recovery(zero: dict, shot: dict) -> tuple:
    """(fewshot_recovery, nulls) of the 2-shot entry of a model with ID topology a and OOD topology o."""
    entries = build_collapse(cells({"a": "id", "o": "ood"}, {("m", "0-shot"): zero, ("m", "2-shot"): shot}))
    entry = next(e for e in entries if e["baseline"] == "2-shot")
    return entry["fewshot_recovery"]["o"], entry["nulls"].get("fewshot_recovery.o")


def test_few_shot_recovery_is_the_share_of_the_zero_shot_gap_closed_or_its_reason():
    assert recovery({"a": 0.75, "o": 0.25}, {"a": 0.75, "o": 0.5}) == (0.5, None)
    assert recovery({"a": 0.75, "o": 0.25}, {"a": 0.75, "o": None}) == (None, NEEDS)  # this baseline's S_ood
    assert recovery({"a": 0.75, "o": None}, {"a": 0.75, "o": 0.5}) == (None, NEEDS)  # the zero-shot S_ood
    assert recovery({"a": None, "o": 0.25}, {"a": 0.75, "o": 0.5}) == (None, NEEDS)  # the zero-shot S_id
    assert recovery({"a": 0.5, "o": 0.5}, {"a": 0.5, "o": 0.75}) == (
        None, "the zero-shot gap is 0: the ratio is undefined: there is nothing to recover")


def test_a_zero_shot_gap_within_the_noise_of_the_id_or_the_ood_cell_has_nothing_to_recover():
    # the noise of the zero-shot ID cell (se 0.0625: margin 0.125) hides a gap of 0.0625
    assert recovery({"a": (0.5, 0.0625), "o": 0.4375}, {"a": 0.5, "o": 0.5}) == (
        None, "the zero-shot gap 0.0625 ties with 0 under the tie rule (margin 0.125): the ratio is undefined: there "
              "is nothing to recover")
    # the noise of the zero-shot OOD cell (se 0.25: margin 0.5) hides a gap of 0.125
    assert recovery({"a": 0.5, "o": (0.375, 0.25)}, {"a": 0.5, "o": 0.5}) == (
        None, "the zero-shot gap 0.125 ties with 0 under the tie rule (margin 0.5): the ratio is undefined: there "
              "is nothing to recover")


def test_a_dimension_as_good_out_of_distribution_does_not_fall_and_the_weakest_is_the_lowest():
    spec = {("m", "0-shot"): {"a": (0.5, 0.0, {"clarification": 0.5, "efficiency": 0.5}),
                              "b": (0.5, 0.0, {"clarification": 0.5, "efficiency": 0.75, "risk": 0.25})}}
    entry, = build_collapse(cells({"a": "id", "b": "ood"}, spec))
    b = entry["dimension_collapse"]["b"]
    assert b["clarification"] == 0.0 and b["efficiency"] == -0.25 and b["falls_most"] is None
    assert entry["nulls"]["dimension_collapse.b.falls_most"] == (
        "no dimension falls (each that applies on both sides is as good or better out of distribution)")
    assert b["weakest"] == {"dimension": "risk", "mean": 0.25}  # the lowest mean, not the first name
