"""Matrix protocols (``matrix:``): validated like every protocol — unknown keys rejected, each mistake one
line 'file:line path: message' — and resolved to the same cells machinery, every topology a test one."""

import json
from pathlib import Path

import pytest

from topoeval.core.errors import ProtocolErrors, UserError
from topoeval.protocol.loader import load_protocol, parse_protocol, protocol_hash
from topoeval.protocol.schema import MATRIX_ROLE

ROOT = Path(__file__).resolve().parents[2]

MATRIX = """\
name: m
matrix:
  topologies:
    - name: a
      suite: wiki
    - name: b
      suite: wiki
      params: {hops: [3]}
tasks:
  test: {n: 3, seed: 1}
  fewshot: {n: 4}
"""


def errors_of(text, registry):
    with pytest.raises(ProtocolErrors) as exc:
        parse_protocol(text, "m.yaml", registry)
    return exc.value.lines


def test_a_matrix_lists_topologies_each_evaluated_with_the_matrix_role(registry):
    p = parse_protocol(MATRIX, "m.yaml", registry)
    assert p.is_matrix and p.train is None and p.test == []
    assert [(t.name, t.role) for t in p.topologies()] == [("a", MATRIX_ROLE), ("b", MATRIX_ROLE)]
    dump = p.model_dump(mode="json")
    assert "matrix" in dump and not {"train", "test", "ladder"} & set(dump)
    with pytest.raises(UserError, match="transfer matrix: it has no train topology .*a, b"):
        p.train_topology()


def test_a_one_way_protocol_dumps_no_matrix_key_so_its_hash_is_unchanged():
    p = load_protocol("wiki_to_travel")
    assert "matrix" not in p.model_dump(mode="json")
    # the hash recorded when the shipped wiki adapter was trained, before the matrix field existed
    assert protocol_hash(p) == json.loads((ROOT / "adapters/smollm2-135m-wiki.json").read_text())["protocol_sha256"]


@pytest.mark.parametrize("edit, expected", [
    (("      params: {hops: [3]}", "      params: {hops: [3]}\n      colour: red"),
     "m.yaml:9 matrix.topologies[1].colour: unknown field"),
    (("    - name: b\n", "    - name: b\n      role: ood\n"), "m.yaml:7 matrix.topologies[1].role: a matrix topology "
                                                               "takes no role"),
    (("    - name: b\n", "    - name: a\n"), "m.yaml:6 matrix.topologies[1].name: duplicate topology name 'a'"),
    (("      suite: wiki\n    - name: b", "      suite: wikki\n    - name: b"),
     "m.yaml:5 matrix.topologies[0].suite: unknown suite 'wikki'"),
    (("name: m\n", "name: m\ntrain: {name: a, suite: wiki}\n"), "m.yaml:2 train: a matrix protocol lists its "
                                                                "topologies under matrix.topologies"),
    (("  fewshot: {n: 4}\n", "  fewshot: {n: 4}\nbaselines: {shots: [0, 1], demos_from: source}\n"),
     "m.yaml:12 baselines.demos_from: a matrix has no single train topology"),
    (("    - name: b\n      suite: wiki\n      params: {hops: [3]}\n", ""),
     "m.yaml:3 matrix.topologies: List should have at least 2 items"),
])
def test_every_mistake_in_a_matrix_is_one_line_with_its_yaml_line_and_field_path(registry, edit, expected):
    lines = errors_of(MATRIX.replace(*edit), registry)
    assert any(line.startswith(expected) for line in lines), lines


def test_a_protocol_without_train_and_test_names_both_and_the_matrix_alternative(registry):
    lines = errors_of("name: p\ntasks: {test: {n: 1}}\n", registry)
    assert [line.split(" (or")[0] for line in lines] == ["m.yaml:1 train: required field is missing",
                                                        "m.yaml:1 test: required field is missing"]
    assert "matrix" in lines[0]


def test_the_shipped_transfer_matrix_spans_wiki_its_format_shift_travel_bfcl_agentdojo_and_git():
    p = load_protocol("transfer_matrix")
    suites = {t.name: t.suite for t in p.topologies()}
    assert suites == {"wiki": "wiki", "wiki-hermes": "wiki", "travel": "travel", "bfcl": "bfcl",
                      "agentdojo-workspace": "agentdojo", "git": "mcp"}
    hermes = next(t for t in p.topologies() if t.name == "wiki-hermes")
    assert [tr.name for tr in hermes.transforms] == ["tool_format"]
    # wiki and travel are declared as the shipped adapters' protocols declare their train topologies
    for protocol in ("wiki_to_travel", "travel_to_wiki"):
        train = load_protocol(protocol).train_topology()
        mine = next(t for t in p.topologies() if t.name == train.name)
        assert (mine.suite, mine.params, mine.transforms) == (train.suite, train.params, train.transforms)
    assert p.tasks.test.n >= 24 and p.baselines.shots == [0]
