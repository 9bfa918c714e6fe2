"""Each tool-call format end to end, against a real local OpenAI-compatible server that replies in it:
the model is addressed in the format (no ``tools`` field for a prompt format, its own instructions in
the system prompt), its calls are read back, malformed ones are recorded invalid calls, and the
format is recorded in run.json and summary.json and is part of the model's name."""

import json

import pytest

import topoeval
from topoeval.models.options import ModelOptions
from topoeval.protocol.discovery import SuiteRegistry

from .format_server import MARKERS, FormatServer

N_TASKS = 6
MODES = ("good", "malformed", "unknown_tool")


@pytest.fixture
def modes(fixture_suites):
    suite = SuiteRegistry([fixture_suites]).get("echo")
    tasks = suite.tasks(suite.parse_params({}), "test", 1, N_TASKS)
    return {t.prompt: MODES[i % len(MODES)] for i, t in enumerate(tasks)}


@pytest.mark.parametrize("fmt", ["native", "hermes", "json", "react", "search-r1"])
def test_a_model_in_each_format(tmp_path, echo_protocol, fixture_suites, modes, fmt):
    server = FormatServer(fmt, modes)
    try:
        out = tmp_path / "run"
        spec = f"direct:scripted@{fmt}"
        res = topoeval.run_protocol(echo_protocol(n=N_TASKS), [spec], out, suites_dirs=[fixture_suites],
                                    model_options=ModelOptions(api_base=server.api_base, max_retries=0, timeout_s=5))
    finally:
        server.stop()
    name = "direct:scripted" if fmt == "native" else spec  # the default format adds nothing to the name
    eps = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 2 * N_TASKS and {e["model"] for e in eps} == {name}
    for ep in eps:
        mode = modes[ep["messages"][0]["content"]]
        assert ep["status"] == "done", (mode, ep["errors"])
        assert ep["scores"]["success"] == 1.0, (mode, ep["messages"][-1])
        assert ep["scores"]["invalid_calls"] == (0 if mode == "good" else 1), (mode, ep["calls"])
    episode_bodies = [b for b in server.bodies if len(b["messages"]) > 1]
    if fmt == "native":
        assert all("tools" in b for b in episode_bodies)
    else:
        assert not any("tools" in b for b in episode_bodies)
        assert all(MARKERS[fmt] in b["messages"][0]["content"] for b in episode_bodies)
        assert all(m["role"] in ("system", "user", "assistant") for b in episode_bodies for m in b["messages"])
    meta = json.loads((out / "run.json").read_text())
    assert meta["tool_formats"]["models"] == {name: fmt}
    assert res.summary["tool_formats"]["models"] == {name: fmt}
    assert res.cell(name, "echo-a")["n_episodes"] == N_TASKS


def test_another_format_is_another_run_not_a_resume(tmp_path, echo_protocol, fixture_suites, modes, monkeypatch):
    """Same model, same folder, two formats: two models' cells, each its own episodes."""
    monkeypatch.chdir(tmp_path)  # default run folders go to ./results
    proto = echo_protocol(n=N_TASKS)
    out = tmp_path / "run"
    for fmt in ("hermes", "json"):
        server = FormatServer(fmt, modes)
        try:
            res = topoeval.run_protocol(proto, [f"direct:scripted@{fmt}"], out, suites_dirs=[fixture_suites],
                                        model_options=ModelOptions(api_base=server.api_base, max_retries=0))
        finally:
            server.stop()
        assert res.new_episodes == 2 * N_TASKS  # nothing of the other format's episodes is reused
    eps = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 4 * N_TASKS and {e["model"] for e in eps} == {"direct:scripted@hermes", "direct:scripted@json"}
    meta = json.loads((out / "run.json").read_text())
    assert meta["tool_formats"]["models"] == {"direct:scripted@hermes": "hermes", "direct:scripted@json": "json"}
    # and the default run folders differ too (the name is in the run id)
    ids = set()
    for fmt in ("hermes", "json"):
        server = FormatServer(fmt, modes)
        try:
            r = topoeval.run_protocol(proto, [f"direct:scripted@{fmt}"], None, suites_dirs=[fixture_suites],
                                      model_options=ModelOptions(api_base=server.api_base, max_retries=0))
        finally:
            server.stop()
        ids.add(r.run_dir.name)
    assert len(ids) == 2
