"""topoeval.integrations.verifiers on multi-turn tasks: real null-harness rollouts in which the
taskset's env plays the user, sending each later instruction when the model answers without a tool
call. Runs in .venv-verifiers (`make test-adapters`); skipped where verifiers 0.4 is absent."""

import asyncio

import pytest

vf = pytest.importorskip("verifiers.v1", reason="verifiers>=0.4 is not installed (make test runs this file in .venv-verifiers)")

from topoeval.core.suite import Task  # noqa: E402
from topoeval.integrations.topology_tasks import load_topology_tasks  # noqa: E402
from topoeval.integrations.verifiers import PLUGIN_ID, TopoevalEnv, TopoevalTasksetConfig  # noqa: E402
from topoeval.runner.run import arun_episodes  # noqa: E402

from .oracle_server import OracleServer  # noqa: E402
from .reference_run import COMPARED  # noqa: E402
from .test_verifiers import harness_env  # noqa: E402

SEQUENTIAL = """name: seq
train: {name: seq, suite: travel, transforms: [{name: split_instructions}]}
test: [{name: seq, role: id, suite: travel, transforms: [{name: split_instructions}]}]
tasks: {test: {n: 2, seed: 3}}
limits: {max_turns: 20, max_tool_calls: 30}
"""


def test_each_instruction_is_sent_in_turn_and_rewards_equal_topoeval_run(monkeypatch, tmp_path):
    protocol = tmp_path / "seq.yaml"
    protocol.write_text(SEQUENTIAL)
    run = asyncio.run(arun_episodes(protocol, ["oracle"], tmp_path / "run", shots=[0]))
    reference = {r["task_id"]: r["scores"] for r in run.records}

    monkeypatch.setenv("TOPOEVAL_TEST_KEY", "local")
    config = TopoevalTasksetConfig(id=PLUGIN_ID, protocol=str(protocol), topology="seq", split="test", n=2)
    agent = vf.AgentConfig(harness={"id": PLUGIN_ID, "env": harness_env()}, runtime=vf.SubprocessConfig())
    env = vf.load_environment(vf.SingleAgentEnvConfig(taskset=config, agent=agent))
    assert isinstance(env, TopoevalEnv)
    tasks = list(env.taskset)
    suite = load_topology_tasks(str(protocol), "seq", "test").topology.suite
    server = OracleServer(suite, [Task.model_validate(t.data.topoeval_task) for t in tasks], "oracle")
    ctx = vf.ModelContext(model="oracle", client=vf.EvalClientConfig(base_url=server.api_base,
                                                                     api_key_var="TOPOEVAL_TEST_KEY"))

    async def rollouts():
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(t, ctx) for t in tasks))

    try:
        episodes = asyncio.run(rollouts())
    finally:
        server.close()
    for task, episode in zip(tasks, episodes):
        trace = episode.traces[0]
        assert not trace.errors, trace.errors
        users = [m.content if isinstance(m.content, str) else "".join(p.text for p in m.content)
                 for m in trace.messages if m.role == "user"]
        assert len(users) == 3 and users[-1] == "Now book it."
        ref = reference[task.data.id]
        assert trace.rewards["topoeval_success"].score == ref["success"] == 1.0
        for dim in COMPARED:
            assert trace.metrics.get(f"topoeval_{dim}") == ref[dim], dim
