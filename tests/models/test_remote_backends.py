"""litellm and the direct path against a real local OpenAI-compatible server (scripted faults).

The server is real HTTP on 127.0.0.1; it stands in for a hosted API, which cannot be reached from
the test machine.
"""

import json
from collections import Counter

import pytest

import topoeval
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.models.options import ModelOptions

from .scripted_server import MODES, ScriptedServer

N_TASKS = 16


@pytest.fixture
def scripted(echo_protocol, fixture_suites):
    proto_path = echo_protocol(n=N_TASKS)
    registry = SuiteRegistry([fixture_suites])
    suite = registry.get("echo")
    tasks = suite.tasks(suite.parse_params({}), "test", 1, N_TASKS)
    modes = {t.prompt: MODES[i % len(MODES)] for i, t in enumerate(tasks)}
    server = ScriptedServer(modes, stall_s=2.0)
    yield proto_path, server, modes
    server.stop()


def options(server):
    return ModelOptions(api_base=server.api_base, api_key="sk-test", timeout_s=1.0, max_retries=3, max_backoff_s=0.3)


@pytest.mark.parametrize("model", ["openai/scripted", "direct:scripted"])
def test_every_episode_recorded_with_the_right_errors(tmp_path, scripted, fixture_suites, model):
    proto, server, modes = scripted
    out = tmp_path / "run"
    res = topoeval.run_protocol(proto, [model], out, suites_dirs=[fixture_suites], model_options=options(server),
                                concurrency=8)
    name = model
    eps = [json.loads(l) for l in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(eps) == 2 * N_TASKS  # two topologies share the same tasks
    by_mode = {}
    for ep in eps:
        prompt = ep["messages"][0]["content"]
        by_mode.setdefault(modes[prompt], []).append(ep)
    for mode, group in by_mode.items():
        for ep in group:
            if mode == "always_500":
                assert ep["status"] == "error" and ep["errors"], ep["errors"]
                assert ep["scores"]["success"] == 0.0
                continue
            assert ep["status"] == "done", (mode, ep["errors"])
            assert ep["scores"]["success"] == 1.0, mode
            expected_invalid = 1 if mode in ("bad_json", "unknown_tool", "wrong_type") else 0
            assert ep["scores"]["invalid_calls"] == expected_invalid, mode
            assert ep["usage"]["prompt_tokens"] > 0
    status = Counter(ep["status"] for ep in eps)
    assert status["error"] == 2 * sum(1 for m in modes.values() if m == "always_500")
    assert res.errors == status["error"]
    assert res.cell(name, "echo-a")["n_episodes"] == N_TASKS


def test_responses_are_cached_so_a_rerun_never_pays_twice(tmp_path, scripted, fixture_suites):
    proto, server, modes = scripted
    out = tmp_path / "run"
    topoeval.run_protocol(proto, ["direct:scripted"], out, suites_dirs=[fixture_suites], model_options=options(server))
    paid = server.requests
    (out / "episodes.jsonl").unlink()  # lose every episode, keep the cache
    again = topoeval.run_protocol(proto, ["direct:scripted"], out, suites_dirs=[fixture_suites], model_options=options(server))
    assert again.new_episodes == 2 * N_TASKS
    # only the preflight request and the never-answered always_500 requests go out again
    failing = sum(1 for m in modes.values() if m == "always_500")
    assert server.requests - paid == 1 + 2 * failing * (options(server).max_retries + 1)


def test_prompt_tool_mode_through_litellm(tmp_path, scripted, fixture_suites):
    proto, server, modes = scripted
    # prompt mode: no tools field, tools described in the system prompt, calls parsed from
    # <tool_call> text, tool results sent back as <tool_response> text
    opts = options(server).model_copy(update={"tool_mode": "prompt"})
    res = topoeval.run_protocol(proto, ["openai/scripted"], tmp_path / "p", suites_dirs=[fixture_suites],
                                model_options=opts, concurrency=8)
    assert server.prompt_mode_requests == server.requests > 0
    eps = [json.loads(l) for l in (tmp_path / "p" / "episodes.jsonl").read_text().splitlines()]
    ok = [e for e in eps if modes[e["messages"][0]["content"]] == "good"]
    assert ok and all(e["scores"]["success"] == 1.0 and e["calls"][0]["status"] == "ok" for e in ok)
    bad = [e for e in eps if modes[e["messages"][0]["content"]] == "bad_json"]
    assert bad and all(e["scores"]["invalid_calls"] == 1 and e["scores"]["success"] == 1.0 for e in bad)
    assert res.errors == 2 * sum(1 for m in modes.values() if m == "always_500")
