"""The format-shift transform (``tool_format``): the same topology, the model addressed in another
tool-call format (its end-to-end runs: tests/formats/test_format_ladder.py)."""

import json

import pytest

from topoeval.core.errors import UserError
from topoeval.formats import suite_format
from topoeval.protocol.loader import load_protocol

PROTOCOL = """\
name: echo_format
train: {name: echo-a, suite: echo}
test:
  - {name: echo-a, role: id, suite: echo}
ladder:
  - name: echo-json
    axis: format
    suite: echo
    transforms: [{name: tool_format, args: {format: json}}]
tasks:
  test: {n: 4, seed: 1}
  fewshot: {n: 4, seed: 2}
"""


def test_the_transform_keeps_the_suite_and_names_its_format(registry):
    from topoeval.protocol.schema import TopologySpec
    from topoeval.protocol.topology import resolve

    plain = resolve(TopologySpec(name="e", suite="echo"), registry)
    shifted = resolve(TopologySpec.model_validate({"name": "e2", "suite": "echo", "transforms": [
        {"name": "tool_format", "args": {"format": "search-r1"}}]}), registry)
    assert suite_format(shifted.suite) == "search-r1" and suite_format(plain.suite) is None
    assert [t.fingerprint() for t in shifted.tasks("test", 3, 5)] == [t.fingerprint() for t in plain.tasks("test", 3, 5)]
    assert shifted.suite.tools == plain.suite.tools


@pytest.mark.parametrize("args, message", [({"format": "xml"}, "unknown format 'xml'"),
                                           ({}, "args.format: tool_format: required argument is missing"),
                                           ({"format": "json", "strict": True},
                                            "unknown argument 'strict' \\(it takes: format\\)")])
def test_a_bad_format_step_is_a_protocol_error(tmp_path, fixture_suites, args, message):
    proto = tmp_path / "p.yaml"
    proto.write_text(PROTOCOL.replace("{format: json}", json.dumps(args)))
    from topoeval.protocol.discovery import SuiteRegistry

    with pytest.raises(UserError, match=message):
        load_protocol(proto, SuiteRegistry([fixture_suites]))
