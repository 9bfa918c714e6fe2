"""topoeval.integrations.openenv: a real OpenEnv server (create_app under uvicorn on 127.0.0.1),
driven over its WebSocket by OpenEnv's own clients with the reference policies' messages; rewards
must equal what `topoeval run` gives the same policy on the same tasks.

Runs in .venv-openenv (`make test` builds it: openenv pins mcp 1.x); skipped where openenv is absent."""

import asyncio
import json
import socket
import threading
import time

import pytest

openenv = pytest.importorskip("openenv", reason="the 'openenv' extra is not installed (make test runs this file in .venv-openenv)")

import uvicorn  # noqa: E402
from openenv import GenericEnvClient  # noqa: E402

from topoeval.integrations.openenv import TopoevalAction, TopoevalClient, make_app  # noqa: E402
from topoeval.integrations.topology_tasks import load_topology_tasks  # noqa: E402

from .reference_run import COMPARED, PROTOCOL, run_scores  # noqa: E402

N = 3


@pytest.fixture(scope="module")
def server():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = make_app(protocol=PROTOCOL, split="test", max_sessions=8)
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not srv.started:
        assert time.time() < deadline, "server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    srv.should_exit = True
    thread.join(10)


def action(message) -> dict:
    """A topoeval assistant message as this server's action."""
    return {"content": message.content,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": json.loads(c.arguments)} for c in message.tool_calls]}


async def play(url: str, topology: str, index: int, variant: str, **reset) -> tuple[object, list]:
    """One episode of the reference policy ``variant`` over the WebSocket; returns the last result."""
    tasks = load_topology_tasks(PROTOCOL, topology, "test")
    task = tasks.task(index)
    steps = []
    async with GenericEnvClient(base_url=url) as env:
        result = await env.reset(seed=index, topology=topology, split="test", **reset)
        assert result.observation["task_id"] == task.id and not result.done
        messages = list(result.observation["messages"])
        while not result.done:
            reply = tasks.topology.suite.oracle(task, messages, variant)
            result = await env.step(action(reply))
            steps.append(result)
            messages += [reply.openai(), *result.observation["messages"]]
    return result, steps


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_oracle_reward_is_one_and_equals_topoeval_run(server, topology, tmp_path):
    reference = run_scores("oracle", N, tmp_path)
    tasks = load_topology_tasks(PROTOCOL, topology, "test")
    for i in range(N):
        last, steps = asyncio.run(play(server, topology, i, "oracle"))
        ref = reference[(topology, tasks.task(i).id)]
        assert last.done and last.reward == 1.0 == ref["success"]
        assert all(s.reward == 0.0 for s in steps[:-1])
        assert {k: last.observation["scores"][k] for k in COMPARED} == {k: ref[k] for k in COMPARED}


def test_dq_reward_of_a_flawed_policy_equals_topoeval_run(server, tmp_path):
    """oracle-reckless pays without the user's confirmation: success 1, risk 0, dq < 1 — as in `topoeval run`."""
    reference = run_scores("oracle-reckless", N, tmp_path)
    tasks = load_topology_tasks(PROTOCOL, "travel", "test")
    for i in range(N):
        last, _ = asyncio.run(play(server, "travel", i, "oracle-reckless", metric="dq"))
        ref = reference[("travel", tasks.task(i).id)]
        assert last.reward == pytest.approx(ref["dq"]) and last.reward < 1.0
        assert last.observation["scores"]["risk"] == 0.0 == ref["risk"]
        assert {k: last.observation["scores"][k] for k in COMPARED} == {k: ref[k] for k in COMPARED}


def test_reset_publishes_the_tools_with_their_annotations(server):
    async def go():
        async with GenericEnvClient(base_url=server) as env:
            return await env.reset(seed=0, topology="travel", split="test")

    obs = asyncio.run(go()).observation
    tools = {t["name"]: t for t in obs["tools"]}
    assert tools["pay"]["annotations"]["destructiveHint"] is True and tools["pay"]["topoeval"]["effect"] == "irreversible"
    assert tools["pay"]["topoeval"]["needs_confirmation"] is True
    assert tools["search_flights"]["annotations"]["readOnlyHint"] is True
    assert tools["hold_seat"]["annotations"] == {"readOnlyHint": False, "destructiveHint": False,
                                                 "idempotentHint": tools["hold_seat"]["topoeval"]["idempotent"],
                                                 "openWorldHint": False}
    assert [m["role"] for m in obs["messages"]] == ["system", "user"]
    assert tools["pay"]["parameters"]["type"] == "object"


def test_typed_client_malformed_calls_and_errors(server):
    """The typed client; a malformed call is an error result (never an exception); misuse is a clear error."""
    with TopoevalClient(base_url=server).sync() as env:
        first = env.reset(index=1, topology="wiki", split="test")
        assert first.observation.index == 1 and first.observation.tools
        bad = env.step(TopoevalAction(tool_calls=[{"name": "no_such_tool", "arguments": "{"}]))
        assert not bad.done and "no_such_tool" in bad.observation.messages[0]["content"]
        assert env.state().tool_calls == 1 and env.state().step_count == 1
        done = env.step(TopoevalAction(content="a guess"))
        assert done.done and done.reward == 0.0 and done.observation.scores["invalid_calls"] == 1
        with pytest.raises(Exception, match="the episode is over"):
            env.step(TopoevalAction(content="again"))
        with pytest.raises(Exception, match="has no topology 'nowhere'"):
            env.reset(topology="nowhere")
        with pytest.raises(Exception, match="unknown reward metric"):
            env.reset(seed=0, metric="speed")


def test_a_reset_names_only_the_protocols_the_operator_named(server, tmp_path):
    """A client cannot choose a file of the host, nor a shipped protocol the operator did not name
    (issue 43); the operator's --allow-protocol list widens what a reset may name."""
    from topoeval.integrations.openenv import TopoevalEnvironment
    from topoeval.protocol.discovery import shipped_protocols_dir

    elsewhere = tmp_path / "client_chose.yaml"
    elsewhere.write_text((shipped_protocols_dir() / "wiki_hops.yaml").read_text())
    with TopoevalClient(base_url=server).sync() as env:
        for name in (str(elsewhere), "wiki_hops", "/etc/passwd"):
            with pytest.raises(Exception, match="is not served here; this server serves"):
                env.reset(protocol=name, split="test")
        assert env.reset(protocol=PROTOCOL, topology="wiki", split="test", seed=0).observation.task_id
    widened = TopoevalEnvironment(protocol=PROTOCOL, split="test", protocols=("wiki_hops",))
    assert widened.reset(protocol="wiki_hops", seed=0).topology == "wiki-1-2hop"
    widened.close()


def test_no_world_process_outlives_its_episode_or_session(tmp_path):
    """Worlds that hold a process (a plain child: this virtualenv's mcp 1.x cannot run the mcp
    suite): closed when the episode is done, when a session resets before finishing, when the
    environment closes, and when a WebSocket session ends — none is left for the garbage collector."""
    from topoeval.integrations.openenv import TopoevalEnvironment

    from .held_processes import process_suite_protocol, processes_with

    marker = str(tmp_path / "held")
    protocol, suites = process_suite_protocol(tmp_path, marker)
    env = TopoevalEnvironment(protocol=str(protocol), split="test", suites_dirs=(str(suites),))
    env.reset(index=0)
    assert len(processes_with(marker)) == 1
    env.step(TopoevalAction(tool_calls=[{"name": "lookup", "arguments": {}}]))
    done = env.step(TopoevalAction(content="42"))
    assert done.done and done.reward == 1.0 and processes_with(marker) == []  # done: closed at once
    env.reset(index=0)
    env.reset(index=1)  # the unfinished first episode is closed
    assert len(processes_with(marker)) == 1
    env.close()
    assert processes_with(marker) == []

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = make_app(protocol=str(protocol), split="test", suites_dirs=(str(suites),))
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.05)

    async def unfinished():
        async with GenericEnvClient(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}") as client:
            await client.reset(seed=0)
            assert len(processes_with(marker)) == 1  # the session's world, alive while it runs

    try:
        asyncio.run(unfinished())
        deadline = time.time() + 10
        while processes_with(marker) and time.time() < deadline:  # the server closes the session after the socket
            time.sleep(0.1)
        assert processes_with(marker) == []
    finally:
        srv.should_exit = True
        thread.join(10)


def _post(url: str, path: str, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    """(status, JSON body) of a POST straight to the server (http.client: no proxy in between)."""
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


@pytest.mark.parametrize("path,body,status,says", [
    ("/reset", {"protocol": "/etc/passwd"}, 404, "protocol '/etc/passwd' is not served here"),
    ("/reset", {"topology": "nowhere"}, 400, "has no topology 'nowhere'"),
    ("/reset", {"seed": 0, "metric": "speed"}, 400, "unknown reward metric"),
    ("/reset", {"index": -1}, 400, "reset argument index: Input should be greater than or equal to 0"),
    ("/reset", {"index": "x"}, 400, "reset argument index: Input should be a valid integer"),
    ("/reset", {"metric": {"success": "x"}}, 400, "reset argument metric: expected a score name"),
    ("/reset", {"bogus": 1}, 400, "unknown reset argument(s) ['bogus']"),
    ("/step", {"action": {"content": "x"}}, 409, "call reset() before step()"),
], ids=["unserved protocol", "unknown topology", "unknown metric", "negative index", "index of the wrong type",
        "metric of the wrong type", "unknown argument", "step without an episode"])
def test_http_refusals_are_4xx_with_their_message(server, path, body, status, says):
    """Issue 56: each was a bare 500 "Internal Server Error"."""
    code, answer = _post(server, path, body)
    assert code == status and says in answer["detail"] and "\n" not in answer["detail"]


def test_a_good_http_reset_is_still_served(server):
    code, answer = _post(server, "/reset", {"seed": 0, "topology": "wiki", "split": "test"})
    assert code == 200 and answer["observation"]["task_id"]


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:1", "null"])
def test_a_page_of_another_origin_can_neither_open_a_session_nor_reset(server, origin):
    """Issue 56: the WebSocket accepted any Origin, so any page a browser opened could drive an environment.
    A foreign Origin (another host, another port, a file:// page's "null") is refused at the handshake
    and over HTTP."""
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    ws_url = server.replace("http://", "ws://") + "/ws"
    with pytest.raises(InvalidStatus) as refused:
        with connect(ws_url, additional_headers={"Origin": origin}, proxy=None, open_timeout=30):
            pass
    assert refused.value.response.status_code == 403
    code, answer = _post(server, "/reset", {"seed": 0}, {"Origin": origin})
    assert code == 403 and "cross-origin request refused" in answer["detail"]


def test_the_servers_own_origin_and_programs_without_one_are_served(server):
    from websockets.sync.client import connect

    ws_url = server.replace("http://", "ws://") + "/ws"
    for headers in ({"Origin": server}, {}):
        with connect(ws_url, additional_headers=headers, proxy=None, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 0, "topology": "wiki", "split": "test"}}))
            answer = json.loads(ws.recv(timeout=30))
            assert answer["type"] == "observation" and answer["data"]["observation"]["task_id"], answer
    assert _post(server, "/reset", {"seed": 0}, {"Origin": server})[0] == 200
