"""What the viewer reads comes from what the run recorded: a crafted run.json naming an MCP suite whose
server and fixture would write markers runs nothing when the served viewer answers every data path or
the export writes it; the system prompts and tool lists shown are prompts.json's, and a run without
it says so; the viewer's modules never import what resolves a protocol."""

import json
import subprocess
import sys

from tests.view.crafted import get, marker_protocol, record, write_run
from topoeval.view.data import NO_PROMPTS, Catalogue
from topoeval.view.server import Viewer

PROMPTS = {"a": {"system_prompt": "You keep notes.", "tools": [
    {"type": "function", "function": {"name": "add_note", "description": "Add a note.",
                                      "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}]}}


def test_serving_and_exporting_a_crafted_run_json_runs_nothing(tmp_path, cli):
    protocol, markers = marker_protocol(tmp_path)
    root = tmp_path / "results"
    write_run(root / "old", [record()], run_json={"protocol": protocol})  # no prompts.json: nothing rebuilt
    write_run(root / "new", [record()], run_json={"protocol": protocol}, prompts=PROMPTS)
    with Viewer(root) as viewer:
        status, _, body = get(viewer.base + "data/runs.json", viewer.token)
        assert status == 200
        for run in json.loads(body)["runs"]:
            for path in (f"data/{run['id']}.json", f"data/{run['id']}/all.json", f"data/{run['id']}/0.json"):
                status, _, body = get(viewer.base + path, viewer.token)
                assert status == 200, path
        assert get(viewer.url)[0] == 200
    assert cli("view", str(root), "--export", str(tmp_path / "site")).returncode == 0
    assert (tmp_path / "site" / "index.html").is_file()
    assert [m for m in markers if m.exists()] == []


def test_the_prompts_shown_are_the_recorded_ones(tmp_path):
    protocol, markers = marker_protocol(tmp_path)
    root = tmp_path / "results"
    write_run(root / "new", [record()], run_json={"protocol": protocol}, prompts=PROMPTS)
    catalogue = Catalogue(root)
    (rid,) = catalogue.runs
    assert catalogue.run_payload(rid)["prompts_recorded"] is True
    assert catalogue.chunk_payload(rid, 0)["prompts"] == PROMPTS
    assert not [m for m in markers if m.exists()]


def test_a_run_without_recorded_prompts_says_so_and_shows_none(tmp_path):
    protocol, _ = marker_protocol(tmp_path)
    root = tmp_path / "results"
    write_run(root / "old", [record()], run_json={"protocol": protocol})
    catalogue = Catalogue(root)
    (rid,) = catalogue.runs
    run = catalogue.run_payload(rid)
    assert run["prompts_recorded"] is False and run["no_prompts"] == NO_PROMPTS
    assert "predates recorded prompts" in NO_PROMPTS
    assert catalogue.chunk_payload(rid, 0)["prompts"] == {}


def test_the_viewer_never_imports_what_resolves_a_protocol():
    code = ("import sys, topoeval.view.server, topoeval.view.export, topoeval.view.data, topoeval.commands.view\n"
            "print(sorted(m for m in sys.modules if m in ('topoeval.protocol.topology', 'topoeval.protocol.discovery',"
            " 'topoeval.protocol.loader')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_a_summary_json_that_does_not_render_leaves_the_run_viewable(tmp_path):
    root = tmp_path / "results"
    run = write_run(root / "r", [record()])
    (run / "summary.json").write_text(json.dumps({"cells": [{"model": 3}, "x"], "protocol": {"a": 1}, "models": 5}))
    catalogue = Catalogue(root)
    (rid,) = catalogue.runs
    assert catalogue.runs_payload()["runs"][0]["models"] == []
    payload = catalogue.run_payload(rid)
    assert payload["headline"] == "" and len(payload["episodes"]) == 1
