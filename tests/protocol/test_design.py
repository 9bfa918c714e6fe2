"""A designed matrix (``matrix.design``): the topologies a few lines generate around a base, and every mistake
in them one line with the YAML line and field path (#58)."""

import pytest

from topoeval.core.errors import ProtocolErrors
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol, parse_protocol, protocol_hash
from topoeval.protocol.schema import DesignSpec, Protocol

HEAD = """\
name: designed
matrix:
  design:
    - base: {name: wiki, suite: wiki, params: {question_types: [single]}}
"""
TAIL = """\
tasks:
  test: {n: 2, seed: 1}
"""


def load(body: str) -> Protocol:
    return parse_protocol(HEAD + body + TAIL, "p.yaml", SuiteRegistry())


def errors(body: str) -> list[str]:
    with pytest.raises(ProtocolErrors) as exc:
        load(body)
    return exc.value.lines


MOVES = """\
      moves:
        - {name: renamed, axis: schema, transforms: [{name: rename_tools}]}
        - {name: hermes, axis: format, transforms: [{name: tool_format, args: {format: hermes}}]}
        - {name: serial, axis: dependency, transforms: [{name: no_batch}]}
"""


@pytest.mark.parametrize("plan,names", [
    ("star", ["wiki", "wiki+renamed", "wiki+hermes", "wiki+serial"]),
    ("pairs", ["wiki", "wiki+renamed", "wiki+hermes", "wiki+serial", "wiki+renamed+hermes", "wiki+renamed+serial",
               "wiki+hermes+serial"]),
    ("factorial", ["wiki", "wiki+renamed", "wiki+hermes", "wiki+serial", "wiki+renamed+hermes",
                   "wiki+renamed+serial", "wiki+hermes+serial", "wiki+renamed+hermes+serial"]),
    ("half_factorial", ["wiki", "wiki+renamed+hermes", "wiki+renamed+serial", "wiki+hermes+serial"]),
])
def test_each_plan_generates_its_combinations_of_moves_around_the_base(plan, names):
    protocol = load(f"      plan: {plan}\n" + MOVES)
    topologies = protocol.matrix.topologies
    assert [t.name for t in topologies] == names
    by_name = {t.name: t for t in topologies}
    assert all(t.suite == "wiki" and t.params == {"question_types": ["single"]} for t in topologies)
    if "wiki+renamed+hermes" in by_name:
        assert [tr.name for tr in by_name["wiki+renamed+hermes"].transforms] == ["rename_tools", "tool_format"]
        assert by_name["wiki+renamed+hermes"]._moves == ("wiki", ("renamed", "hermes"))


def test_listed_pairs_are_the_only_pairs_run():
    protocol = load("      plan: pairs\n      pairs: [[hermes, renamed]]\n" + MOVES)
    assert [t.name for t in protocol.matrix.topologies][-1] == "wiki+renamed+hermes"
    assert len(protocol.matrix.topologies) == 5


def test_the_canonical_form_holds_the_generated_topologies_not_the_design_and_reloads_to_the_same_hash():
    protocol = load(MOVES)
    dump = protocol.model_dump(mode="json")
    assert "design" not in dump["matrix"] and len(dump["matrix"]["topologies"]) == 4
    again = Protocol.model_validate(dump)  # run.json's protocol, read back: not expanded a second time
    assert [t.name for t in again.matrix.topologies] == [t.name for t in protocol.matrix.topologies]
    assert protocol_hash(again) == protocol_hash(protocol)


@pytest.mark.parametrize("body,expected", [
    ("      moves:\n        - {name: r, axis: shema, transforms: [{name: rename_tools}]}\n",
     "p.yaml:6 matrix.design[0].moves[0].axis: Input should be 'state', 'reversibility'"),
    ("      moves:\n        - {name: r, axis: schema, transfroms: [{name: rename_tools}]}\n",
     "p.yaml:6 matrix.design[0].moves[0].transfroms: unknown field (did you mean 'transforms'?)"),
    ("      moves:\n        - {name: r, axis: schema}\n",
     "p.yaml:6 matrix.design[0].moves[0]: move 'r' changes nothing: give it transforms or params"),
    ("      moves:\n        - {name: r, axis: format, transforms: [{name: rename_tools}]}\n",
     "p.yaml:6 matrix.design[0].moves[0].transforms[0].name: 'rename_tools' moves the schema axis, not format"),
    ("      moves:\n        - {name: r, axis: schema, transforms: [{name: rename_tools, args: {sed: 1}}]}\n",
     "p.yaml:6 matrix.design[0].moves[0].transforms[0].args.sed: rename_tools: unknown argument 'sed' "
     "(did you mean 'seed'?)"),
    ("      moves:\n        - {name: r, axis: schema, transforms: [{name: rename_tools}]}\n"
     "        - {name: r, axis: format, transforms: [{name: tool_format, args: {format: hermes}}]}\n",
     "p.yaml:7 matrix.design[0].moves[1].name: duplicate move name 'r'"),
    ("      plan: pairs\n      pairs: [[renamed, hermess]]\n" + MOVES,
     "p.yaml:6 matrix.design[0].pairs[0]: no move named 'hermess' (did you mean 'hermes'?)"),
    ("      pairs: [[renamed, hermes]]\n" + MOVES,
     "p.yaml:5 matrix.design[0].pairs: pairs apply to plan: pairs only (this plan is star)"),
    ("      moves:\n        - {name: r, axis: schema, params: {top_k: 3}}\n"
     "        - {name: s, axis: dependency, params: {top_k: 4}}\n      plan: factorial\n",
     "p.yaml:7 matrix.design[0].moves[1].params.top_k: moves 'r' and 's' run together and set top_k to different "
     "values"),
    ("      moves:\n        - {name: r, axis: schema, params: {top_k: 99}}\n",
     "p.yaml:6 matrix.design[0].moves[0].params.top_k: Input should be less than or equal to 20"),
])
def test_a_mistake_in_a_design_is_one_line_with_the_yaml_line_and_field_path(body, expected):
    found = errors(body)
    assert any(e.startswith(expected) for e in found), found
    assert len(found) == 1, found


def test_a_design_too_large_is_refused_before_its_topologies_are_made():
    moves = "".join(f"        - {{name: m{i}, axis: schema, params: {{top_k: {i + 1}}}}}\n" for i in range(9))
    assert any("would generate 512 topologies (at most 256): use plan star or pairs" in e
               for e in errors("      plan: factorial\n      moves:\n" + moves))


def test_the_shipped_axis_matrix_moves_every_axis_each_base_can_express():
    protocol = load_protocol("axis_matrix")
    designs: list[DesignSpec] = protocol.matrix.design
    axes = {d.base.name: {m.axis for m in d.moves} for d in designs}
    assert axes == {"wiki": {"schema", "format", "dependency"},
                    "travel": {"schema", "format", "user", "ordering", "reversibility", "dependency", "instructions"}}
    moves = {d.base.name: {m.name for m in d.moves} for d in designs}
    assert {"merged", "refundable", "no-user", "hidden", "split", "flat"} <= moves["travel"]
    names = [t.name for t in protocol.matrix.topologies]
    assert "travel+hermes+merged" in names and "wiki+renamed+hermes" in names and len(names) == len(set(names))
