"""prompts.json: what each topology of a run showed the model, written when the run starts, read without
following, trusting or running anything."""

from __future__ import annotations

import os

import topoeval
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol
from topoeval.protocol.topology import resolve
from topoeval.runner.prompts import (
    MAX_PROMPTS_BYTES,
    PROMPTS_JSON,
    RecordedPrompts,
    TopologyPrompt,
    read_prompts,
    write_prompts,
)


def test_an_oracle_run_records_each_topologys_system_prompt_and_tools(tmp_path, echo_protocol, fixture_suites):
    proto = echo_protocol(n=1)
    run = topoeval.run_protocol(proto, ["oracle"], tmp_path / "run", tasks=1, suites_dirs=[fixture_suites])
    recorded = read_prompts(run.run_dir)
    assert recorded is not None and recorded.format == 1
    registry = SuiteRegistry([fixture_suites])
    topologies = [resolve(t, registry) for t in load_protocol(proto, registry).topologies()]
    assert set(recorded.topologies) == {t.name for t in topologies} == {"echo-a", "echo-b"}
    for topo in topologies:
        assert recorded.topologies[topo.name].system_prompt == topo.system_prompt()
        assert recorded.topologies[topo.name].tools == [spec.openai() for spec in topo.suite.tools]
        assert recorded.topologies[topo.name].tools  # the echo suite offers tools


def test_the_cli_run_writes_prompts_json(tmp_path, echo_protocol, fixture_suites, cli):
    proc = cli("run", str(echo_protocol(n=1)), "-m", "oracle", "--tasks", "1", "--out", str(tmp_path / "run"),
               "--suites-dir", str(fixture_suites))
    assert proc.returncode == 0, proc.stderr
    assert set(read_prompts(tmp_path / "run").topologies) == {"echo-a", "echo-b"}


def test_a_resumed_run_keeps_the_prompts_json_it_has(tmp_path, echo_protocol, fixture_suites):
    proto, out = echo_protocol(n=1), tmp_path / "run"
    topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    kept = RecordedPrompts(topologies={"echo-a": TopologyPrompt(system_prompt="as first recorded", tools=[])})
    write_prompts(out, kept)
    topoeval.run_protocol(proto, ["oracle", "noop"], out, suites_dirs=[fixture_suites])  # resumed, a model added
    assert read_prompts(out) == kept
    (out / PROMPTS_JSON).unlink()  # a folder from before prompts.json: the resumed run writes it
    topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    assert set(read_prompts(out).topologies) == {"echo-a", "echo-b"}


def _valid(folder):
    write_prompts(folder, RecordedPrompts(topologies={"t": TopologyPrompt(system_prompt="hello", tools=[])}))


def test_a_symlinked_prompts_json_reads_as_none(tmp_path):
    elsewhere, run = tmp_path / "elsewhere", tmp_path / "run"
    elsewhere.mkdir()
    run.mkdir()
    _valid(elsewhere)
    assert read_prompts(elsewhere) is not None  # the target itself is a valid file
    os.symlink(elsewhere / PROMPTS_JSON, run / PROMPTS_JSON)
    assert read_prompts(run) is None


def test_an_oversized_or_invalid_or_missing_prompts_json_reads_as_none(tmp_path):
    assert read_prompts(tmp_path) is None  # a folder written before prompts.json
    _valid(tmp_path)
    path = tmp_path / PROMPTS_JSON
    with open(path, "ab") as fh:  # past the limit (a sparse file: no disk used)
        fh.truncate(MAX_PROMPTS_BYTES + 1)
    assert read_prompts(tmp_path) is None
    for text in ("{", "[]", '{"topologies": {"t": {"system_prompt": 1}}}', '{"topologies": {}, "extra": 1}'):
        path.write_text(text)
        assert read_prompts(tmp_path) is None, text
    path.unlink()
    path.mkdir()  # not a regular file
    assert read_prompts(tmp_path) is None


def test_a_fifo_named_prompts_json_reads_as_none_without_blocking(tmp_path):
    os.mkfifo(tmp_path / PROMPTS_JSON)
    assert read_prompts(tmp_path) is None


def test_a_shards_folder_and_a_workers_run_each_have_prompts_json(tmp_path, echo_protocol, fixture_suites):
    proto = echo_protocol(n=2)
    topoeval.run_protocol(proto, ["oracle"], tmp_path / "shard", shard="2/2", suites_dirs=[fixture_suites])
    assert set(read_prompts(tmp_path / "shard").topologies) == {"echo-a", "echo-b"}
    topoeval.run_protocol(proto, ["oracle"], tmp_path / "workers", workers=2, suites_dirs=[fixture_suites])
    assert read_prompts(tmp_path / "workers") == read_prompts(tmp_path / "shard")
