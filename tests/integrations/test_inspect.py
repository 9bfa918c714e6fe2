"""topoeval.integrations.inspect: `inspect_ai.eval` on topoeval_task(...) end to end, with inspect's
mockllm replaying the reference policies' turns and with a real OpenAI-compatible server on
127.0.0.1 answering with them; the scores must equal what `topoeval run` gives the same policy."""

import json
import math

import pytest

pytest.importorskip("inspect_ai", reason="the 'inspect' extra is not installed")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.tool import ToolCall  # noqa: E402

from topoeval.integrations.inspect import topoeval_task  # noqa: E402
from topoeval.integrations.topology_tasks import REPORTED, load_topology_tasks  # noqa: E402

from .held_processes import mcp_notes_protocol, processes_with, spy_on_worlds  # noqa: E402
from .oracle_server import OracleServer  # noqa: E402
from .reference_run import COMPARED, PROTOCOL, run_scores  # noqa: E402

N = 3


def scripted_outputs(topology: str, variant: str) -> list[ModelOutput]:
    """The policy's turns on each task, in sample order, as mockllm outputs (worlds are deterministic,
    so the turns a reference policy takes in topoeval are the ones it would take in inspect)."""
    tasks = load_topology_tasks(PROTOCOL, topology, "test")
    outputs = []
    for task in tasks.tasks(N):
        state = tasks.episode(task)
        while not state.done:
            reply = tasks.topology.suite.oracle(task, state.messages, variant)
            state.step(reply)
            calls = [ToolCall(id=c.id, function=c.name, arguments=json.loads(c.arguments)) for c in reply.tool_calls]
            message = ChatMessageAssistant(content=reply.content or "", tool_calls=calls or None, model="mockllm")
            outputs.append(ModelOutput(model="mockllm", choices=[ChatCompletionChoice(
                message=message, stop_reason="tool_calls" if calls else "stop")],
                usage=ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)))  # else mockllm loads tiktoken
    return outputs


def run_inspect(topology: str, model, tmp_path) -> list:
    task = topoeval_task(PROTOCOL, topology=topology, split="test", n=N)
    [log] = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", max_samples=1)
    assert log.status == "success", log.error
    return log


def check(log, reference, topology: str) -> None:
    for sample in log.samples:
        ref = reference[(topology, sample.id)]
        [score] = sample.scores.values()
        got = {k: None if math.isnan(score.value[k]) else score.value[k] for k in COMPARED}
        assert got == {k: ref[k] for k in COMPARED}, sample.id
        assert {k: score.metadata["scores"][k] for k in COMPARED} == {k: ref[k] for k in COMPARED}
        assert score.metadata["scores"]["tool_calls"] == ref["tool_calls"]
    metrics = next(iter(log.results.scores)).metrics if len(log.results.scores) == 1 else {
        s.name: next(iter(s.metrics.values())) for s in log.results.scores}
    for name in REPORTED:  # each mean over the samples where the dimension applies, as topoeval's cells
        applicable = [reference[(topology, s.id)][name] for s in log.samples if reference[(topology, s.id)][name] is not None]
        got = metrics[name].value
        assert (math.isnan(got) and not applicable) or got == pytest.approx(sum(applicable) / len(applicable)), name


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_mockllm_oracle_scores_equal_topoeval_run(topology, tmp_path):
    reference = run_scores("oracle", N, tmp_path / "run")
    log = run_inspect(topology, get_model("mockllm/model", custom_outputs=scripted_outputs(topology, "oracle")), tmp_path)
    assert all(s.scores["topoeval_scorer"].value["success"] == 1.0 for s in log.samples)
    check(log, reference, topology)


def test_openai_compatible_server_with_a_flawed_oracle_equals_topoeval_run(tmp_path, monkeypatch):
    """oracle-reckless over HTTP: success 1 but risk 0 and dq < 1 on travel — `topoeval run`'s numbers."""
    reference = run_scores("oracle-reckless", N, tmp_path / "run")
    tasks = load_topology_tasks(PROTOCOL, "travel", "test")
    server = OracleServer(tasks.topology.suite, tasks.tasks(N), "oracle-reckless")
    try:
        model = get_model("openai-api/local/oracle-reckless", base_url=server.api_base, api_key="local")
        log = run_inspect("travel", model, tmp_path)
    finally:
        server.close()
    assert server.requests > 0
    assert all(s.scores["topoeval_scorer"].value["risk"] == 0.0 for s in log.samples)
    check(log, reference, "travel")


def test_every_samples_world_is_closed(tmp_path, monkeypatch):
    """A world that holds a server process (MCP) must not outlive its sample."""
    from topoeval.core.suite import World

    closed = []
    monkeypatch.setattr(World, "close", lambda self: closed.append(type(self).__name__))
    run_inspect("wiki", get_model("mockllm/model", custom_outputs=scripted_outputs("wiki", "oracle")), tmp_path)
    assert len(closed) == 2 * N  # each sample's world (the solver's) and its scorer's replay world


@pytest.mark.slow
def test_no_mcp_server_process_outlives_an_inspect_rollout(tmp_path, monkeypatch):
    """An MCP topology served over stdio (a real server process per world): after inspect's eval,
    no server process and no scratch folder is left — the solver's worlds and the scorer's replays."""
    import tempfile

    own = tmp_path / "tmp"
    own.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own))  # every scratch folder (and so every server's command line)
    protocol = str(mcp_notes_protocol(tmp_path, n=2))
    tasks = load_topology_tasks(protocol, "notes_test", "test")
    outputs = []
    for task in tasks.tasks(2):
        state = tasks.episode(task)
        try:
            while not state.done:
                reply = tasks.topology.suite.oracle(task, state.messages, "oracle")
                state.step(reply)
                calls = [ToolCall(id=c.id, function=c.name, arguments=json.loads(c.arguments)) for c in reply.tool_calls]
                outputs.append(ModelOutput(model="mockllm", choices=[ChatCompletionChoice(
                    message=ChatMessageAssistant(content=reply.content or "", tool_calls=calls or None, model="mockllm"),
                    stop_reason="tool_calls" if calls else "stop")],
                    usage=ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)))
        finally:
            state.close()
    probe = tasks.topology.suite.make_world(tasks.task(0))
    probe.close()
    made, closed = spy_on_worlds(monkeypatch, type(probe))
    task = topoeval_task(protocol, topology="notes_test", split="test", n=2)
    [log] = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=outputs), log_dir=str(tmp_path / "logs"),
                         display="none", max_samples=1)
    assert log.status == "success", log.error
    assert all(s.scores["topoeval_scorer"].value["success"] == 1.0 for s in log.samples)  # the server really ran
    # 2 samples x (solver + scorer replay), and the gold plan's world of each task's collateral scope (once a task),
    # each closed
    assert len(made) == 6 and set(closed) >= set(made)
    assert processes_with(str(own)) == []
    assert list(own.glob("topoeval-mcp-*")) == []
