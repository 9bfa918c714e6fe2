"""Infrastructure failures are never scored as the model's: a real local server that rejects the key
(401), does not serve the model (404), or is down for the whole run (500).

401 and 404 cannot be fixed by retrying: the preflight request turns them into one line naming the
model and the fix, exit 2, before any episode. A server down for the whole run leaves every episode
in ``error``: left out of the scores, counted per cell, marked incomplete, exit 3; the same command
run again once the server is back retries exactly those episodes.
"""

import json
import os
import subprocess

import pytest

import topoeval
from topoeval.api import BackendWarning
from topoeval.core.errors import UserError
from topoeval.models.options import ModelOptions

from .scripted_server import ScriptedServer

N_TASKS = 3


@pytest.fixture
def server(request):
    server = ScriptedServer({}, **getattr(request, "param", {}))
    yield server
    server.stop()


def run_cmd(topoeval_cmd, proto, fixture_suites, out, model, server, *extra):
    return [*topoeval_cmd, "run", str(proto), "-m", model, "--suites-dir", str(fixture_suites), "--out", str(out),
            "--api-base", server.api_base, "--api-key", "sk-test", "--timeout", "5", "--max-retries", "2", *extra]


def episodes(out):
    path = out / "episodes.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []


def run_in_process(proto, fixture_suites, out, model, server):
    """The same run through the Python API (litellm is imported once per test session, not per run)."""
    options = ModelOptions(api_base=server.api_base, api_key="sk-test", timeout_s=5, max_retries=2, max_backoff_s=0.05)
    return topoeval.run_protocol(proto, [model], out, suites_dirs=[fixture_suites], model_options=options)


@pytest.mark.parametrize("server", [{"status_all": 401}], indirect=True)
def test_rejected_key_stops_the_run_before_any_episode(tmp_path, echo_protocol, fixture_suites, topoeval_cmd, server):
    out = tmp_path / "run"
    proc = subprocess.run(run_cmd(topoeval_cmd, echo_protocol(n=N_TASKS), fixture_suites, out, "direct:scripted", server),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("error: model 'direct:scripted': the credentials were rejected (HTTP 401")
    assert "--api-key" in lines[0]
    assert server.requests == 1  # one preflight request, not retried
    assert episodes(out) == [] and not (out / "summary.json").exists()
    with pytest.raises(UserError, match=r"^model 'openai/scripted': the credentials were rejected \(HTTP 401.*--api-key"):
        run_in_process(echo_protocol(n=N_TASKS), fixture_suites, tmp_path / "litellm", "openai/scripted", server)
    assert server.requests == 2 and episodes(tmp_path / "litellm") == []


@pytest.mark.parametrize("server", [{"served_model": "scripted"}], indirect=True)
def test_unknown_model_stops_the_run_before_any_episode(tmp_path, echo_protocol, fixture_suites, topoeval_cmd, server):
    out = tmp_path / "run"
    proc = subprocess.run(run_cmd(topoeval_cmd, echo_protocol(n=N_TASKS), fixture_suites, out, "direct:gpt-9", server),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: model 'direct:gpt-9': the model or endpoint was not found (HTTP 404")
    assert "gpt-9" in lines[0] and "check the model name" in lines[0] and server.api_base in lines[0]
    assert server.requests == 1 and episodes(out) == []
    with pytest.raises(UserError, match=r"^model 'openai/gpt-9': the model or endpoint was not found \(HTTP 404.*check the model name"):
        run_in_process(echo_protocol(n=N_TASKS), fixture_suites, tmp_path / "litellm", "openai/gpt-9", server)
    assert server.requests == 2 and episodes(tmp_path / "litellm") == []


def test_missing_api_key_is_one_line_naming_the_variable(tmp_path, echo_protocol, fixture_suites, monkeypatch):
    """No OPENAI_API_KEY and no --api-key: litellm fails before sending anything (and calls it a 500)."""
    for var in [v for v in os.environ if v.startswith("OPENAI_")]:
        monkeypatch.delenv(var)
    with pytest.raises(UserError) as err:
        topoeval.run_protocol(echo_protocol(n=N_TASKS), ["openai/gpt-4o-mini"], tmp_path / "run",
                              suites_dirs=[fixture_suites], model_options=ModelOptions(timeout_s=5))
    message = str(err.value)
    assert message.startswith("model 'openai/gpt-4o-mini': no API key was given") and "\n" not in message
    assert "set OPENAI_API_KEY or pass --api-key" in message
    assert episodes(tmp_path / "run") == []


def test_a_model_name_litellm_cannot_route_is_one_line_with_the_direct_form(tmp_path, echo_protocol, fixture_suites):
    """A Hugging Face id given to -m without direct: (an easy slip, the id holds a '/'): litellm refuses it before
    sending anything; one line that names the direct: and provider-prefix forms, not "a topoeval bug"."""
    with pytest.raises(UserError) as err:
        topoeval.run_protocol(echo_protocol(n=N_TASKS), ["Qwen/Qwen2.5-1.5B-Instruct"], tmp_path / "run",
                              suites_dirs=[fixture_suites],
                              model_options=ModelOptions(api_base="http://127.0.0.1:9/v1", timeout_s=5))
    message = str(err.value)
    assert message.startswith("model 'Qwen/Qwen2.5-1.5B-Instruct': litellm cannot tell which provider serves")
    assert "-m direct:NAME --api-base URL" in message and "topoeval bug" not in message and "\n" not in message
    assert episodes(tmp_path / "run") == []


@pytest.mark.parametrize("server", [{"status_all": 500}], indirect=True)
def test_server_down_for_the_whole_run(tmp_path, echo_protocol, fixture_suites, topoeval_cmd, server):
    out, proto = tmp_path / "run", echo_protocol(n=N_TASKS)
    cmd = run_cmd(topoeval_cmd, proto, fixture_suites, out, "direct:scripted", server)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "warning: model 'direct:scripted': the preflight request failed" in proc.stderr
    assert "6 episode(s) ended in error" in proc.stderr and "run the same command again" in proc.stderr
    eps = episodes(out)
    assert len(eps) == 2 * N_TASKS and all(e["status"] == "error" for e in eps)
    # 1 preflight request, then each episode's first request and its 2 retries
    assert server.requests == 1 + 2 * N_TASKS * 3
    summary = json.loads((out / "summary.json").read_text())
    assert_nothing_scored(summary["cells"])
    assert "— (3 err)" in proc.stdout and "0.00" not in proc.stdout
    assert "**Incomplete.**" in (out / "report.md").read_text()
    # the server is back: the same command retries exactly the errored episodes
    server.status_all = None
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "(6 new episodes, 0 resumed)" in again.stdout
    latest = {e["key"]: e for e in episodes(out)}
    assert len(latest) == 2 * N_TASKS and all(e["status"] == "done" for e in latest.values())
    summary = json.loads((out / "summary.json").read_text())
    assert all(c["n_errors"] == 0 and not c["incomplete"] and c["metrics"]["success"]["mean"] == 1.0
               for c in summary["cells"])
    third = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0 and "(0 new episodes, 6 resumed)" in third.stdout


@pytest.mark.parametrize("server", [{"status_all": 500}], indirect=True)
def test_server_down_for_the_whole_run_through_litellm(tmp_path, echo_protocol, fixture_suites, server):
    with pytest.warns(BackendWarning, match="the preflight request failed"):
        res = run_in_process(echo_protocol(n=N_TASKS), fixture_suites, tmp_path / "run", "openai/scripted", server)
    assert res.errors == 2 * N_TASKS and server.requests == 1 + 2 * N_TASKS * 3
    assert_nothing_scored(res.cells)


def assert_nothing_scored(cells):
    for cell in cells:
        # nothing is counted as a model failure: no statistic at all, the cell incomplete
        assert cell["n_errors"] == N_TASKS and cell["incomplete"] and cell["metrics"] == {}
        assert cell["episode_ids"] == [] and len(cell["error_episode_ids"]) == N_TASKS
