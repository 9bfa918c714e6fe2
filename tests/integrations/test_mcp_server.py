"""`topoeval serve-mcp`: a topology's task served over stdio MCP, driven by the mcp SDK's client.

The oracle's trajectory, sent call by call (each turn's calls marked with the same
``topoeval/turn``), must earn exactly the scores `topoeval run`'s episode earns; the tools carry
MCP hints and topoeval's annotations in ``_meta``; bad requests end in one-line errors.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from urllib.parse import quote

import pytest
from mcp import Client, StdioServerParameters

from topoeval.core.policy import SamplingParams
from topoeval.integrations.mcp_server import SCORES_URI, TASK_URI, TURN_META
from topoeval.integrations.topology_tasks import load_topology_tasks
from topoeval.policies.registry import make_policy
from topoeval.runner.episode import run_episode

CLI = "from topoeval.cli import main; main()"


def server(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-c", CLI, "serve-mcp", *args])


async def drive_oracle(params: StdioServerParameters, target: str, topology: str | None, split: str, index: int):
    """(task info, served scores, listed tools) of the oracle played through the MCP server."""
    tasks = load_topology_tasks(target, topology, split)
    task = tasks.task(index)
    async with Client(params, cache=None) as client:
        listed = (await client.list_tools()).tools
        info = json.loads((await client.read_resource(TASK_URI)).contents[0].text)
        messages = [{"role": "user", "content": info["prompt"]}]
        turn = 0
        while True:
            reply = tasks.topology.suite.oracle(task, messages, "oracle")
            messages.append(reply.openai())
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                result = await client.call_tool(call.name, json.loads(call.arguments), meta={TURN_META: turn})
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                 "content": result.content[0].text})
            turn += 1
        answer = quote(reply.content or "")
        served = json.loads((await client.read_resource(f"{SCORES_URI}?answer={answer}")).contents[0].text)
    return task, info, served, listed


async def run_scores(target: str, topology: str | None, split: str, index: int) -> dict:
    """The scores `topoeval run`'s runner gives the oracle on the same task, prompt and limits."""
    tasks = load_topology_tasks(target, topology, split)
    record = await run_episode(policy=make_policy("oracle"), suite=tasks.topology.suite, task=tasks.task(index),
                               system_prompt=tasks.system_prompt(), demos=[], limits=tasks.limits,
                               sampling=SamplingParams(), sample=0, shots=0, labels={})
    return record["scores"]


@pytest.mark.parametrize("target, topology, index", [
    ("wiki_to_travel", "travel", 0),   # hidden slots, a parallel search turn, confirm, irreversible pay
    ("wiki_to_travel", "travel", 2),
    ("wiki_hops", None, 1),            # read-only chains
    ("mcp", None, 16),                 # the mcp suite served over MCP: a commit confirmed with the user
])
def test_oracle_through_serve_mcp_scores_as_topoeval_run(target, topology, index):
    args = [target, "--split", "test", "--index", str(index)] + (["--topology", topology] if topology else [])
    task, info, served, listed = asyncio.run(drive_oracle(server(*args), target, topology, "test", index))
    assert info["task_id"] == task.id and info["prompt"] == task.prompt
    assert served["task_id"] == task.id and served["status"] == "done"
    expected = asyncio.run(run_scores(target, topology, "test", index))
    assert served["scores"] == expected
    assert served["scores"]["success"] == 1.0


def test_tools_carry_mcp_hints_and_topoeval_meta():
    async def listing():
        async with Client(server("wiki_to_travel", "--topology", "travel", "--index", "0"), cache=None) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = asyncio.run(listing())
    pay, search, ask = tools["pay"], tools["search_flights"], tools["ask_user"]
    assert pay.annotations.destructive_hint and not pay.annotations.read_only_hint
    assert pay.meta["topoeval/effect"] == "irreversible" and pay.meta["topoeval/needs_confirmation"] is True
    assert search.annotations.read_only_hint and search.meta["topoeval/parallel_safe"] is True
    assert ask.meta["topoeval/user_channel"] is True
    assert search.input_schema["required"] == ["origin", "destination", "date"]


def test_bad_calls_are_tool_errors_and_the_episode_records_them():
    async def play():
        async with Client(server("wiki_to_travel", "--topology", "travel", "--index", "0"), cache=None) as client:
            unknown = await client.call_tool("teleport", {"to": "Mars"})
            bad = await client.call_tool("search_flights", {"origin": "Oslo"})
            scores = json.loads((await client.read_resource(f"{SCORES_URI}?answer=")).contents[0].text)
            late = await client.call_tool("search_flights", {"origin": "a", "destination": "b", "date": "2025-01-01"})
            return unknown, bad, scores, late

    unknown, bad, scores, late = asyncio.run(play())
    assert unknown.is_error and "unknown tool 'teleport'" in unknown.content[0].text
    assert bad.is_error and "required" in bad.content[0].text
    assert scores["scores"]["invalid_calls"] == 2 and scores["scores"]["success"] == 0.0
    assert late.is_error and "over" in late.content[0].text


@pytest.mark.parametrize("args, message", [
    (["nosuch"], "unknown"),
    (["wiki_to_travel", "--topology", "travel", "--task-id", "travel/test/0-00000000"], "not in this topology"),
    (["mcp", "--index", "999"], "no task 999"),
    (["wiki_to_travel", "--index", "1", "--task-id", "x"], "not both"),
])
def test_bad_requests_are_one_line_errors(topoeval_cmd, args, message):
    proc = subprocess.run([*topoeval_cmd, "serve-mcp", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""  # stdout is the MCP channel: nothing else may be written there
