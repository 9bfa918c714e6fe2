"""Format shift as a measured axis: the ``tool_format`` transform's ladder steps, end to end (the
shipped format ladder on the reference policies; a native model shifted to two prompt formats
against a real local server)."""

import json

import topoeval
from topoeval.models.options import ModelOptions

from .format_server import FormatServer

LADDER_PROTOCOL = """\
name: echo_format
train: {name: echo-a, suite: echo}
test:
  - {name: echo-a, role: id, suite: echo}
ladder:
  - name: echo-json
    axis: format
    suite: echo
    transforms: [{name: tool_format, args: {format: json}}]
  - name: echo-react
    axis: format
    suite: echo
    transforms: [{name: tool_format, args: {format: react}}]
tasks:
  test: {n: 4, seed: 1}
  fewshot: {n: 4, seed: 2}
baselines: {shots: [0, 1]}
"""


def test_the_shipped_format_ladder_applies_each_step_and_the_oracle_stays_at_one(tmp_path):
    res = topoeval.run_protocol("wiki_format_ladder", ["oracle", "noop"], tmp_path / "r", tasks=4)
    cells = {(c["model"], c["topology"]): c for c in res.summary["cells"]}
    for step in ("wiki", "wiki-hermes", "travel-hermes", "travel"):
        assert cells[("oracle", step)]["metrics"]["success"]["mean"] == 1.0, step
        assert cells[("noop", step)]["metrics"]["success"]["mean"] == 0.0, step
    ladder = {e["model"]: e["metrics"] for e in res.summary["ladder"]}
    curve = ladder["oracle"]["success"]["curve"]
    assert [(p["topology"], p["axis"]) for p in curve] == [("wiki", None), ("wiki-hermes", "format"),
                                                          ("travel-hermes", "topology")]
    assert ladder["oracle"]["success"]["shape"] == "flat"
    # the reference policies act on the world directly: no format of their own; the steps' formats are recorded
    assert res.summary["tool_formats"] == {"models": {}, "topologies": {"wiki-hermes": "hermes", "travel-hermes": "hermes"}}
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["tool_formats"]["topologies"] == {"wiki-hermes": "hermes", "travel-hermes": "hermes"}
    assert ladder["oracle"]["success"]["drop_by_axis"] == {"format": 0.0, "topology": 0.0}
    assert ladder["noop"]["success"]["drop_by_axis"] == {"format": 0.0, "topology": 0.0}
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| loss by axis |" in md and "| oracle | 0-shot | success | 1.00 | 1.00 | 1.00 |" in md


def test_a_format_shift_step_changes_only_what_the_model_is_sent(tmp_path, fixture_suites):
    """One native model on the id topology and two format-shift steps of it: each step's requests are
    written in its format (none answered from another step's cached replies), every episode succeeds,
    and the 1-shot demos are rendered in the step's format too."""
    proto = tmp_path / "p.yaml"
    proto.write_text(LADDER_PROTOCOL)
    server = FormatServer("auto", {})
    try:
        res = topoeval.run_protocol(proto, ["direct:scripted"], tmp_path / "r", suites_dirs=[fixture_suites],
                                    model_options=ModelOptions(api_base=server.api_base, max_retries=0))
    finally:
        server.stop()
    for topo in ("echo-a", "echo-json", "echo-react"):
        for baseline in ("0-shot", "1-shot"):
            cell = next(c for c in res.summary["cells"] if c["topology"] == topo and c["baseline"] == baseline)
            assert cell["metrics"]["success"]["mean"] == 1.0, (topo, baseline)
    seen = server.fmt_seen[1:]  # after the preflight
    # per format: 4 tasks x 2 baselines x 2 turns (look up, answer)
    assert {f: seen.count(f) for f in set(seen)} == {"native": 16, "json": 16, "react": 16}
    shots = [b for b in server.bodies if "tools" not in b and any("Final Answer:" in m["content"] for m in b["messages"]
                                                                   if m["role"] == "assistant")]
    assert shots, "a 1-shot demo in the react step is written in react"
    assert res.summary["tool_formats"]["topologies"] == {"echo-json": "json", "echo-react": "react"}
    assert res.summary["tool_formats"]["models"] == {"direct:scripted": "native"}


def test_the_ladder_splits_a_loss_into_format_and_topology():
    """drop_by_axis on a curve that loses 0.3 at the format step and 0.4 at the topology step."""
    from topoeval.analysis.ladder import build_ladders

    def cell(topology, mean):
        return {"model": "m", "baseline": "0-shot", "topology": topology,
                "metrics": {"success": {"mean": mean, "std": 0.0, "se": 0.01, "ci95": [mean, mean]}}}

    steps = [("wiki", None), ("wiki-hermes", "format"), ("travel-hermes", "topology")]
    [entry] = build_ladders([cell("wiki", 0.8), cell("wiki-hermes", 0.5), cell("travel-hermes", 0.1)], steps)
    success = entry["metrics"]["success"]
    assert success["drop_by_axis"] == {"format": 0.3, "topology": 0.4}
    assert success["breaking_axis"] == "topology"
