"""Protocol validation: every error is one line 'file:line path: message'."""


import importlib.util

import pytest

from topoeval.core.errors import ProtocolErrors
from topoeval.protocol.loader import format_loc, load_protocol, parse_protocol

GOOD = """\
name: p
train:
  name: a
  suite: wiki
test:
  - name: a
    role: id
    suite: wiki
  - name: b
    role: ood
    suite: wiki
    params: {hops: [3]}
tasks:
  test: {n: 3, seed: 1}
  fewshot: {n: 4}
baselines: {shots: [0, 1, 2, 4]}
"""


def errors_of(text, registry, filename="x.yaml"):
    with pytest.raises(ProtocolErrors) as exc:
        parse_protocol(text, filename, registry)
    return exc.value.lines


def test_good_protocol_parses(registry):
    p = parse_protocol(GOOD, "x.yaml", registry)
    assert p.baselines.shots == [0, 1, 2, 4]
    assert [t.role for t in p.test] == ["id", "ood"]


def test_unknown_suite_names_line_path_and_suggestion(registry):
    text = GOOD.replace("  - name: b\n    role: ood\n    suite: wiki", "  - name: b\n    role: ood\n    suite: wikii")
    assert errors_of(text, registry, "protocols/x.yaml") == [
        "protocols/x.yaml:11 test[1].suite: unknown suite 'wikii' (did you mean 'wiki'?)"
    ]


def test_bad_shot_counts(registry):
    (line,) = errors_of(GOOD.replace("shots: [0, 1, 2, 4]", "shots: [0, 2, 2]"), registry)
    assert line.startswith("x.yaml:16 baselines.shots: ") and "duplicate" in line
    (line,) = errors_of(GOOD.replace("shots: [0, 1, 2, 4]", "shots: [0, -1]"), registry)
    assert line.startswith("x.yaml:16 baselines.shots[1]: ")
    (line,) = errors_of(GOOD.replace("shots: [0, 1, 2, 4]", "shots: [0, 8]"), registry)
    assert line == "x.yaml:16 baselines.shots: asks for 8 demonstrations but tasks.fewshot.n is 4"


def test_negative_counts(registry):
    (line,) = errors_of(GOOD.replace("test: {n: 3, seed: 1}", "test: {n: -3, seed: 1}"), registry)
    assert line.startswith("x.yaml:14 tasks.test.n: ") and "greater than or equal to 0" in line
    (line,) = errors_of(GOOD + "samples: 0\n", registry)
    assert line.startswith("x.yaml:17 samples: ")


def test_duplicate_names(registry):
    (line,) = errors_of(GOOD.replace("  - name: b\n", "  - name: a\n"), registry)
    assert line == "x.yaml:9 test[1].name: duplicate topology name 'a' (also test[0])"


def test_duplicate_yaml_keys(registry):
    (line,) = errors_of(GOOD + "samples: 2\nsamples: 3\n", registry)
    assert line.startswith("x.yaml:18 samples: key 'samples' appears twice")


def test_yaml_syntax_error(registry):
    (line,) = errors_of(GOOD.replace("shots: [0, 1, 2, 4]", "shots: [0, 1"), registry)
    assert line.startswith("x.yaml:") and "YAML syntax error" in line


@pytest.mark.parametrize("text", ["", "\n# only a comment\n"])
def test_empty_file(registry, text):
    assert errors_of(text, registry) == ["x.yaml:1: empty protocol file"]


def test_not_a_mapping(registry):
    assert errors_of("- a\n- b\n", registry) == ["x.yaml:1: a protocol is a mapping of fields, got list"]


def test_unknown_field_with_suggestion(registry):
    (line,) = errors_of(GOOD + "sample: 2\n", registry)
    assert line == "x.yaml:17 sample: unknown field (did you mean 'samples'?)"


def test_missing_role_and_bad_params_and_unknown_transform(registry):
    text = GOOD.replace("    role: ood\n", "").replace("params: {hops: [3]}", "params: {hops: [9], colour: red}")
    text = text.replace("  - name: a\n    role: id\n    suite: wiki\n", "  - name: a\n    role: id\n    suite: wiki\n    transforms: [{name: rename_toolz}]\n")
    lines = errors_of(text, registry)
    assert any(l.startswith("x.yaml:10 test[1].role: ") and "needs a role" in l for l in lines)
    assert any(l.startswith("x.yaml:12 test[1].params.hops[0]: ") or l.startswith("x.yaml:12 test[1].params.hops: ") for l in lines)
    assert any("test[1].params.colour: unknown field" in l for l in lines)
    assert any("test[0].transforms[0].name: unknown transform 'rename_toolz'" in l for l in lines)


def test_no_id_topology(registry):
    (line,) = errors_of(GOOD.replace("role: id", "role: ood"), registry)
    assert "needs at least one topology with role: id" in line


def test_format_loc():
    assert format_loc(("test", 1, "params", "hops", 0)) == "test[1].params.hops[0]"
    assert format_loc(()) == "(top level)"


def test_shipped_protocols_validate():
    from topoeval.protocol.discovery import protocol_names

    assert "wiki_hops" in protocol_names()
    for name in protocol_names():
        if name.startswith("wiki_to_tau2") and importlib.util.find_spec("tau2") is None:
            continue  # τ² lives in .venv-tau2 (tests/suites/test_tau2.py validates it; test_tau2_without_extra.py here)
        load_protocol(name)


def test_cli_validate_exit_2_one_line_per_error(tmp_path, cli):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("suite: wiki\n  - name: b", "suite: travl\n  - name: b"))
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    proc = cli("validate", str(good), str(bad))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"{bad}:8 test[0].suite: unknown suite 'travl' (did you mean 'travel'?)"]
    assert f"{good}: ok" in proc.stdout


def test_transform_that_does_not_apply_to_the_suite(registry):
    text = GOOD.replace("    params: {hops: [3]}\n", "    params: {hops: [3]}\n    transforms: [{name: hide_slots, args: {slots: [budget]}}]\n")
    (line,) = errors_of(text, registry)
    assert line.startswith("x.yaml:13 test[1].transforms: transform 'hide_slots' does not apply to suite 'wiki'")


def test_ladder_step_naming_a_test_topology_is_that_topology(registry):
    text = GOOD + "ladder:\n  - {name: b, axis: schema}\n"
    protocol = parse_protocol(text, "x.yaml", registry)
    assert [t.name for t in protocol.topologies()] == ["a", "b"]  # b is not evaluated twice
    lines = errors_of(GOOD + "ladder:\n  - {name: c, axis: schema}\n  - {name: b, axis: user, params: {hops: [2]}}\n",
                      registry)
    assert lines[0].startswith("x.yaml:18 ladder[0].suite: a ladder step needs a suite, or the name of a test topology")
    assert lines[1].startswith("x.yaml:19 ladder[1]: step 'b' is the test topology of that name")
    assert errors_of(GOOD.replace("  suite: wiki\ntest:", "test:"), registry)[0].endswith("train.suite: missing: every topology names its suite")


def test_a_ladder_step_that_is_the_topology_before_it_is_refused_naming_its_line(registry):
    """A step moves one axis: one equal to the step before it (the first: the ID topology the curve starts at)
    moves none, even when it spells a default parameter out; a step that moves one still loads."""
    ladder = ("ladder:\n"
              "  - {name: c, axis: schema, suite: wiki, params: {hops: [2]}}\n"  # 'a' with wiki's default written out
              "  - {name: d, axis: user, suite: wiki, params: {hops: [3]}}\n"
              "  - {name: b, axis: state}\n")  # the OOD test topology: wiki with hops [3], as 'd'
    lines = errors_of(GOOD + ladder, registry)
    assert lines == ["x.yaml:18 ladder[0]: step 'c' moves no axis: it is the same topology as 'a' before it "
                     "(same suite, parameters and transforms)",
                     "x.yaml:20 ladder[2]: step 'b' moves no axis: it is the same topology as 'd' before it "
                     "(same suite, parameters and transforms)"]
    moving = ladder.replace("params: {hops: [2]}", "transforms: [{name: rename_tools, args: {seed: 1}}]")
    assert [t.name for t in parse_protocol(GOOD + moving.replace("  - {name: b, axis: state}\n", ""), "x.yaml",
                                           registry).ladder] == ["c", "d"]


def test_params_that_contradict_the_transforms_are_named(registry):
    text = GOOD.replace("    suite: wiki\n    params: {hops: [3]}\n",
                        "    suite: travel\n    params: {user: false}\n    transforms: [{name: hide_slots, args: {slots: [budget]}}]\n")
    (line,) = errors_of(text, registry)
    assert line.startswith("x.yaml:12 test[1].params: with the transforms:") and "'hide' needs user: true" in line


def test_a_default_the_user_never_wrote_is_named_as_a_default_with_the_fix(tmp_path):
    """tasks.fewshot.n defaults to 8: on a topology without a fewshot split, the error says it is the
    default and how to fix it (issue 27's mcp-server-time example with few-shot baselines)."""
    pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed (the mcp extra has it)")
    from pathlib import Path

    from topoeval.protocol.discovery import SuiteRegistry

    example = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "time"
    text = (example / "protocol.yaml").read_text().replace("tasks: tasks.yaml", f"tasks: {example / 'tasks.yaml'}")
    with pytest.raises(ProtocolErrors) as err:
        parse_protocol(text + "baselines: {shots: [0, 2]}\n", "t.yaml", SuiteRegistry())
    (line,) = err.value.lines
    assert ("tasks.fewshot.n is 8 (the default: the protocol does not set it) but the fewshot split of 'time_test' "
            "(mcp), where demonstrations for baselines.shots [0, 2] come from, holds 0 tasks: give the topology "
            "fewshot tasks, or set baselines.shots to [0] (no demonstrations)") in line
    written = text.replace("tasks: {test: {n: 3}}", "tasks: {test: {n: 3}, fewshot: {n: 2}}")
    with pytest.raises(ProtocolErrors, match=r"tasks.fewshot.n is 2 but"):  # written by the user: no 'default'
        parse_protocol(written + "baselines: {shots: [0, 2]}\n", "t.yaml", SuiteRegistry())
