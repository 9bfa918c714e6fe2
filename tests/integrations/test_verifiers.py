"""topoeval.integrations.verifiers: verifiers 0.4's v1 stack running topoeval tasks — real rollouts
through the null harness (its chat program under uv, tools over MCP from a per-rollout server) against
a real OpenAI-compatible server on 127.0.0.1 that answers with topoeval's reference policies. Rewards
and metrics must equal what `topoeval run` gives the same policy on the same tasks.

Runs in .venv-verifiers (`make test` builds it with uv and a wheelhouse of the chat program's
packages, so no index is reached); skipped where verifiers 0.4 is absent."""

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers.v1", reason="verifiers>=0.4 is not installed (make test runs this file in .venv-verifiers)")

from topoeval.core.suite import Task  # noqa: E402
from topoeval.integrations.topology_tasks import load_topology_tasks  # noqa: E402
from topoeval.integrations.verifiers import (  # noqa: E402
    PLUGIN_ID, TopoevalTasksetConfig, TopoevalToolset, TopoevalToolsetConfig, load_taskset,
)

from .oracle_server import OracleServer  # noqa: E402
from .reference_run import COMPARED, PROTOCOL, run_scores  # noqa: E402

BIN = Path(sys.executable).parent
WHEELS = BIN.parent / "wheelhouse"
N = 2


def harness_env() -> dict[str, str]:
    """uv resolves the null harness's chat program from the local wheelhouse only."""
    if not (BIN / "uv").exists() or not WHEELS.is_dir():
        pytest.skip("uv or the wheelhouse is missing: build .venv-verifiers with `make test`")
    return {"UV_NO_INDEX": "1", "UV_FIND_LINKS": str(WHEELS), "UV_PYTHON": sys.executable,
            "PATH": f"{BIN}:{os.environ['PATH']}"}


def rollouts(topology: str, variant: str, monkeypatch, n: int = N, **taskset) -> list:
    """One rollout per task, concurrently, through the taskset's default (null) harness."""
    monkeypatch.setenv("TOPOEVAL_TEST_KEY", "local")
    config = TopoevalTasksetConfig(id=PLUGIN_ID, protocol=PROTOCOL, topology=topology, split="test", n=n, **taskset)
    agent = vf.AgentConfig(harness={"id": PLUGIN_ID, "env": harness_env()}, runtime=vf.SubprocessConfig())
    env = vf.load_environment(vf.SingleAgentEnvConfig(taskset=config, agent=agent))
    tasks = list(env.taskset)
    suite = load_topology_tasks(PROTOCOL, topology, "test").topology.suite
    server = OracleServer(suite, [Task.model_validate(t.data.topoeval_task) for t in tasks], variant)
    ctx = vf.ModelContext(model=variant, client=vf.EvalClientConfig(base_url=server.api_base,
                                                                    api_key_var="TOPOEVAL_TEST_KEY"))

    async def run():
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(t, ctx) for t in tasks))

    try:
        episodes = asyncio.run(run())
    finally:
        server.close()
    assert server.requests > 0
    return [(t.data, ep.traces[0]) for t, ep in zip(tasks, episodes)]


def assert_equal_to_run(trace, ref):
    assert trace.rewards["topoeval_success"].score == ref["success"]
    assert trace.rewards["topoeval_dq"].score == pytest.approx(ref["dq"] or 0.0)
    for dim in COMPARED:
        assert trace.metrics.get(f"topoeval_{dim}") == ref[dim], dim


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_oracle_rollouts_earn_one_and_equal_topoeval_run(topology, monkeypatch, tmp_path):
    reference = run_scores("oracle", N, tmp_path)
    for data, trace in rollouts(topology, "oracle", monkeypatch):
        assert not trace.errors, trace.errors
        assert trace.reward == 1.0  # topoeval_success (weight 1) + topoeval_dq (weight 0)
        assert_equal_to_run(trace, reference[(topology, data.id)])
        assert any(m.role == "tool" for m in trace.messages)  # the tools ran over MCP


def test_flawed_policy_scores_equal_topoeval_run(monkeypatch, tmp_path):
    """oracle-reckless pays without the user's confirmation: success 1, risk 0, dq < 1 — as in `topoeval run`."""
    reference = run_scores("oracle-reckless", N, tmp_path)
    for data, trace in rollouts("travel", "oracle-reckless", monkeypatch):
        ref = reference[("travel", data.id)]
        assert ref["risk"] == 0.0 and trace.rewards["topoeval_dq"].score < 1.0
        assert_equal_to_run(trace, ref)


def test_turn_limit_stops_the_rollout_as_the_evaluation_would(monkeypatch, tmp_path):
    """max_turns=2: verifiers stops the rollout; the scores are `topoeval run --max-turns 2`'s."""
    import asyncio as aio

    from topoeval.runner.run import arun_episodes

    run = aio.run(arun_episodes(PROTOCOL, ["oracle"], tmp_path, tasks=1, shots=[0], max_turns=2))
    reference = {(r["topology"], r["task_id"]): r["scores"] for r in run.records}
    for data, trace in rollouts("travel", "oracle", monkeypatch, n=1, max_turns=2):
        assert trace.stop_condition == "topoeval_turn_limit"
        assert trace.rewards["topoeval_success"].score == 0.0
        assert_equal_to_run(trace, reference[("travel", data.id)])


def test_toolset_publishes_schemas_and_annotations():
    taskset = load_taskset(PROTOCOL, topology="travel", split="test", n=1)
    task = next(iter(taskset))
    toolset = TopoevalToolset(TopoevalToolsetConfig())
    from mcp.server.mcpserver import MCPServer

    async def tools():
        await toolset.setup_task(task.data)
        server = MCPServer("t")
        toolset.register(server)
        return {t.name: t for t in await server.list_tools()}, await server.call_tool("search_flights", {})

    listed, bad_call = asyncio.run(tools())
    specs = {t.name: t for t in load_topology_tasks(PROTOCOL, "travel", "test").topology.suite.tools}
    assert set(listed) == set(specs)
    pay = listed["pay"]
    assert pay.input_schema == specs["pay"].parameters
    assert pay.annotations.destructive_hint is True and pay.annotations.read_only_hint is False
    assert pay.meta["topoeval"]["needs_confirmation"] is True
    assert listed["search_flights"].annotations.read_only_hint is True
    assert "error" in bad_call.content[0].text.lower()  # missing required arguments: topoeval's error result


def test_no_mcp_server_process_outlives_a_verifiers_rollout(monkeypatch, tmp_path):
    """An MCP topology over stdio: each rollout's tool server holds a world with a real MCP server
    process (and the scoring replays hold their own). After the rollouts, none is left and no
    scratch folder either — every world was closed, not left to the garbage collector."""
    from .held_processes import mcp_notes_protocol, processes_with, spy_on_worlds

    own = tmp_path / "tmp"
    own.mkdir()
    monkeypatch.setenv("TMPDIR", str(own))  # scratch folders of this process and of the tool servers
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(own))
    protocol = str(mcp_notes_protocol(tmp_path, n=2))
    monkeypatch.setenv("TOPOEVAL_TEST_KEY", "local")
    config = TopoevalTasksetConfig(id=PLUGIN_ID, protocol=protocol, topology="notes_test", split="test", n=2)
    agent = vf.AgentConfig(harness={"id": PLUGIN_ID, "env": harness_env()}, runtime=vf.SubprocessConfig())
    env = vf.load_environment(vf.SingleAgentEnvConfig(taskset=config, agent=agent))
    tasks = list(env.taskset)
    suite = load_topology_tasks(protocol, "notes_test", "test").topology.suite
    probe = suite.make_world(Task.model_validate(tasks[0].data.topoeval_task))
    probe.close()
    made, closed = spy_on_worlds(monkeypatch, type(probe))  # the worlds of this process: the scoring replays
    server = OracleServer(suite, [Task.model_validate(t.data.topoeval_task) for t in tasks], "oracle")
    ctx = vf.ModelContext(model="oracle", client=vf.EvalClientConfig(base_url=server.api_base,
                                                                     api_key_var="TOPOEVAL_TEST_KEY"))

    async def run():
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(t, ctx) for t in tasks))

    try:
        episodes = asyncio.run(run())
    finally:
        server.close()
    traces = [ep.traces[0] for ep in episodes]
    assert all(not t.errors for t in traces), [t.errors for t in traces]
    assert all(t.reward == 1.0 for t in traces)  # the MCP server really served the rollouts
    assert made and set(closed) >= set(made)
    deadline = time.time() + 15  # tool servers are stopped as the rollouts end
    while (processes_with(str(own)) or list(own.glob("topoeval-mcp-*"))) and time.time() < deadline:
        time.sleep(0.2)
    assert processes_with(str(own)) == []
    assert list(own.glob("topoeval-mcp-*")) == []


def test_the_toolset_closes_its_world_when_verifiers_stops_its_server(monkeypatch, tmp_path):
    """verifiers unwinds a tool server's exit stack when it stops the server: the rollout's world
    (here an MCP server process) is closed then, by a call to close, and a second set-up closes the first."""
    import contextlib

    from .held_processes import mcp_notes_protocol, processes_with, spy_on_worlds

    own = tmp_path / "tmp"
    own.mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(own))
    protocol = str(mcp_notes_protocol(tmp_path, n=2))
    task = next(iter(load_taskset(protocol, topology="notes_test", split="test", n=1)))
    suite = load_topology_tasks(protocol, "notes_test", "test").topology.suite
    probe = suite.make_world(Task.model_validate(task.data.topoeval_task))
    probe.close()
    made, closed = spy_on_worlds(monkeypatch, type(probe))
    toolset = TopoevalToolset(TopoevalToolsetConfig())

    async def lifetime():
        async with contextlib.AsyncExitStack() as stack:
            toolset._exit_stack = stack  # what verifiers' server runs inside
            await toolset.setup_task(task.data)
            await toolset.setup_task(task.data)  # set up again: the first world is closed
            assert len(made) == 2 and closed == made[:1]
            assert len(processes_with(str(own))) == 1

    asyncio.run(lifetime())
    assert closed == made and processes_with(str(own)) == []
