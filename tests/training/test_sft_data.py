"""``export --format sft --from-run``: a run folder's conversations are rebuilt from the protocol the user
names, never from the one the folder's run.json records; a folder of another protocol is refused."""

from __future__ import annotations

import json

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.training.sft_data import export_sft


def _export(protocol, run_dir, out, fixture_suites):
    return export_sft(protocol, out, split="test", policy=None, from_runs=[run_dir], suites_dirs=[fixture_suites])


def test_a_run_exports_with_the_protocol_it_was_run_with_overrides_included(tmp_path, echo_protocol, fixture_suites):
    proto = echo_protocol(n=2)
    run = topoeval.run_protocol(proto, ["oracle"], tmp_path / "run", max_turns=5, temperature=0.5,
                                suites_dirs=[fixture_suites])
    manifest = _export(proto, run.run_dir, tmp_path / "sft", fixture_suites)
    # echo-a and echo-b pose the same tasks: each conversation once
    assert manifest["sources"] == {"run:run": {"episodes": 4, "kept": 2, "failed": 0, "tools_change": 0}}


def test_a_run_of_another_protocol_is_refused_naming_both(tmp_path, echo_protocol, fixture_suites):
    proto = echo_protocol(n=1)
    run = topoeval.run_protocol(proto, ["oracle"], tmp_path / "run", suites_dirs=[fixture_suites])
    other = tmp_path / "other.yaml"
    other.write_text(proto.read_text().replace("name: echo_proto", "name: echo_other"))
    with pytest.raises(UserError, match="holds a run of protocol 'echo_proto', not of protocol 'echo_other'"):
        _export(other, run.run_dir, tmp_path / "sft", fixture_suites)


def test_a_run_whose_recorded_protocol_differs_in_content_is_refused(tmp_path, echo_protocol, fixture_suites):
    proto = echo_protocol(n=1)
    run = topoeval.run_protocol(proto, ["oracle"], tmp_path / "run", suites_dirs=[fixture_suites])
    path = run.run_dir / "run.json"
    meta = json.loads(path.read_text())
    meta["protocol"]["test"][1]["params"] = {"delay_s": 0.25}  # same name, one parameter changed
    path.write_text(json.dumps(meta))
    with pytest.raises(UserError, match="other content than the protocol 'echo_proto'"):
        _export(proto, run.run_dir, tmp_path / "sft", fixture_suites)
    meta["protocol"] = "not a protocol"
    path.write_text(json.dumps(meta))
    with pytest.raises(UserError, match="holds a run of no readable protocol"):
        _export(proto, run.run_dir, tmp_path / "sft", fixture_suites)
