"""Every transform's arguments are checked when a protocol loads: an unknown argument (with a did-you-mean),
a wrong type or a value out of range is one line with the YAML line and the field path, never a silent
default. The shipped protocols still validate."""

import importlib.util
from pathlib import Path

import pytest

from topoeval.core.errors import ProtocolErrors, UserError
from topoeval.protocol.loader import load_protocol, parse_protocol
from topoeval.protocol.schema import TransformSpec
from topoeval.transforms import apply_transforms, known_transforms

#: a protocol whose ood topology (line 11) carries the transform under test on line 13
TEMPLATE = """\
name: p
train:
  name: a
  suite: {suite}
test:
  - name: a
    role: id
    suite: {suite}
  - name: b
    role: ood
    suite: {suite}
    transforms:
      - {{name: {name}, args: {args}}}
tasks:
  test: {{n: 2, seed: 1}}
"""

#: transform -> (suite it applies to, a misspelt argument and its suggestion, a wrongly typed one, one out of range)
CASES = {
    "rename_tools": ("wiki", "sed", "seed", "{seed: one}", "{seed: -1}"),
    "rename_args": ("wiki", "sede", "seed", "{seed: 1.5}", "{seed: -2}"),
    "shuffle_priority": ("travel", "seeds", "seed", "{seed: [1]}", "{seed: -1}"),
    "distractor_tools": ("wiki", "nn", "n", "{n: three}", "{n: -3}"),
    "hide_slots": ("travel", "slot", "slots", "{slots: budget}", "{slots: []}"),
    "tool_format": ("wiki", "formats", "format", "{format: 3}", "{format: hermess}"),
    "merge_hold_pay": ("travel", "x", None, None, None),
    "refundable": ("travel", "full", None, None, None),
    "batch_api": ("wiki", "size", None, None, None),
    "no_batch": ("wiki", "calls", None, None, None),
    "split_instructions": ("travel", "n", None, None, None),
}

#: the required arguments, given alongside a misspelt one
REQUIRED = {"hide_slots": ", slots: [budget]", "tool_format": ", format: hermes"}


def errors_of(text, registry):
    with pytest.raises(ProtocolErrors) as exc:
        parse_protocol(text, "x.yaml", registry)
    return exc.value.lines


def protocol(name, args):
    return TEMPLATE.format(suite=CASES[name][0], name=name, args=args)


def test_every_transform_has_a_case():
    assert set(CASES) == set(known_transforms())


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unknown_argument_is_one_line_with_line_path_and_suggestion(registry, name):
    _, typo, meant, _, _ = CASES[name]
    required = REQUIRED.get(name, "")
    (line,) = errors_of(protocol(name, f"{{{typo}: 1{required}}}"), registry)
    assert line.startswith(f"x.yaml:13 test[1].transforms[0].args.{typo}: {name}: unknown argument '{typo}'")
    assert line.endswith(f"(did you mean '{meant}'?)" if meant else "(it takes no arguments)")


@pytest.mark.parametrize("name", sorted(n for n, case in CASES.items() if case[3]))
def test_a_wrongly_typed_argument_is_one_line(registry, name):
    _, _, field, wrong_type, _ = CASES[name]
    (line,) = errors_of(protocol(name, wrong_type), registry)
    assert line.startswith(f"x.yaml:13 test[1].transforms[0].args.{field}: {name}: ")
    assert "valid" in line  # "Input should be a valid integer/list/string"


@pytest.mark.parametrize("name", sorted(n for n, case in CASES.items() if case[4]))
def test_an_argument_out_of_range_is_one_line(registry, name):
    _, _, field, _, out_of_range = CASES[name]
    (line,) = errors_of(protocol(name, out_of_range), registry)
    assert line.startswith(f"x.yaml:13 test[1].transforms[0].args.{field}: {name}: ")


def test_a_missing_required_argument_is_named(registry):
    (line,) = errors_of(protocol("hide_slots", "{}"), registry)
    assert line == "x.yaml:13 test[1].transforms[0].args.slots: hide_slots: required argument is missing"


def test_the_issue_s_examples_no_longer_pass_with_defaults(registry):
    assert errors_of(protocol("distractor_tools", "{count: 3}"), registry) == [
        "x.yaml:13 test[1].transforms[0].args.count: distractor_tools: unknown argument 'count' (it takes: n)"]
    (line,) = errors_of(protocol("distractor_tools", "{n: -3}"), registry)
    assert line == ("x.yaml:13 test[1].transforms[0].args.n: distractor_tools: "
                    "Input should be greater than or equal to 1")
    (line,) = errors_of(protocol("distractor_tools", "{n: 7}"), registry)
    assert "less than or equal to 6" in line


def test_valid_arguments_still_load_and_take_effect(registry):
    p = parse_protocol(protocol("distractor_tools", "{n: 3}"), "x.yaml", registry)
    suite = apply_transforms(registry.get("wiki"), p.test[1].transforms)
    assert suite.manifest.topology.distractor_tools == 3


def test_applying_transforms_outside_a_protocol_checks_the_arguments_too(registry):
    with pytest.raises(UserError, match="transform 'rename_tools' argument sed: unknown argument 'sed'"):
        apply_transforms(registry.get("wiki"), [TransformSpec(name="rename_tools", args={"sed": 1})])


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[2].joinpath("protocols").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_the_shipped_protocols_still_validate(path):
    if path.stem.startswith("wiki_to_tau2") and importlib.util.find_spec("tau2") is None:
        pytest.skip("τ² is an extra of its own virtualenv (.venv-tau2), where this protocol is checked")
    load_protocol(path)
