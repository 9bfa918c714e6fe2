"""HTTP 400s read by their body, on litellm and the direct path, against a real local server:
a context overflow is the model's limit, a content-policy refusal is the model's answer (scored),
any other 400 is a request topoeval built that the server rejected — one line, never retried."""

import json

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.core.policy import REFUSAL_PREFIX
from topoeval.models.options import ModelOptions
from topoeval.protocol.discovery import SuiteRegistry

from .scripted_server import ScriptedServer

MODELS = ["openai/scripted", "direct:scripted"]


def tasks_of(fixture_suites, n):
    suite = SuiteRegistry([fixture_suites]).get("echo")
    return suite.tasks(suite.parse_params({}), "test", 1, n)


def options(server):
    return ModelOptions(api_base=server.api_base, api_key="sk-test", timeout_s=2.0, max_retries=3, max_backoff_s=0.1)


@pytest.mark.parametrize("model", MODELS)
def test_overflow_is_a_limit_and_a_refusal_is_the_models_answer(tmp_path, echo_protocol, fixture_suites, model):
    modes = ("context_overflow", "content_policy", "content_filter", "good")
    tasks = tasks_of(fixture_suites, len(modes))
    server = ScriptedServer({t.prompt: m for t, m in zip(tasks, modes)})
    try:
        res = topoeval.run_protocol(echo_protocol(n=len(modes)), [model], tmp_path / "run", suites_dirs=[fixture_suites],
                                    model_options=options(server))
    finally:
        server.stop()
    eps = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    by_mode = {}
    for ep in eps:
        by_mode.setdefault(modes[[t.prompt for t in tasks].index(ep["messages"][0]["content"])], []).append(ep)
    assert res.errors == 0 and all(not ep["errors"] for ep in eps)
    for ep in by_mode["context_overflow"]:
        assert ep["status"] == "limit:context_window"
    for mode in ("content_policy", "content_filter"):
        for ep in by_mode[mode]:
            assert ep["status"] == "done" and ep["final_answer"].startswith(REFUSAL_PREFIX), ep["final_answer"]
            assert ep["scores"]["success"] == 0.0  # scored as the answer it is
    assert "safety system" in by_mode["content_policy"][0]["final_answer"]
    assert all(ep["scores"]["success"] == 1.0 for ep in by_mode["good"])
    # neither was retried: one request per refused episode (two topologies share the tasks)
    refused = [t.prompt for t, m in zip(tasks, modes) if m != "good"]
    assert all(server.attempts[(p, 0)] == 2 for p in refused)


@pytest.mark.parametrize("model", MODELS)
def test_any_other_400_ends_the_run_with_one_line_and_is_never_retried(tmp_path, echo_protocol, fixture_suites, model):
    tasks = tasks_of(fixture_suites, 3)
    server = ScriptedServer({tasks[1].prompt: "bad_request"})
    try:
        with pytest.raises(UserError) as info:
            topoeval.run_protocol(echo_protocol(n=3), [model], tmp_path / "run", suites_dirs=[fixture_suites],
                                  model_options=options(server), concurrency=1)
    finally:
        server.stop()
    line = str(info.value)
    assert "\n" not in line and "HTTP 400" in line and "tool_choice" in line and "topoeval bug" in line, line
    assert server.attempts[(tasks[1].prompt, 0)] == 1
    # the episodes finished before it are kept: the same command resumes from them once fixed
    kept = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    assert all(json.loads(line)["status"] != "error" for line in kept)
