"""Servers take only their owner's requests (issue 43): every llama-server topoeval starts — the one
a run's local model uses, and `topoeval serve-model`'s — refuses a request without its API key
(HTTP 401) except /health, so no other local process can erase or restore slots, swap adapters or
take slots during a run. Real llama-server processes; the key is not on their command line."""

import asyncio
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.models.llama_procs import require_server

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module", autouse=True)
def gguf():
    return require_server()


def status(url: str, body: dict | None = None, key: str | None = None) -> int:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def assert_owner_only(url: str, key: str, pid: int) -> None:
    prompt = {"prompt": "hi", "n_predict": 1, "temperature": 0.0}
    assert status(url + "/health") == 200  # public: readiness probes need no key
    for path, body in (("/completion", prompt), ("/v1/completions", prompt), ("/slots/0?action=erase", {}),
                       ("/lora-adapters", None), ("/slots", None)):
        assert status(url + path, body) == 401, path
        assert status(url + path, body, key="not-the-key") == 401, path
    assert status(url + "/completion", prompt, key=key) == 200
    assert key.encode() not in open(f"/proc/{pid}/cmdline", "rb").read()  # other users can read a command line


def test_the_server_of_a_runs_local_model_refuses_requests_without_its_key(gguf):
    from topoeval.core.policy import SamplingParams
    from topoeval.models.llama_server_policy import LlamaServerPolicy
    from topoeval.models.options import ModelOptions

    policy = LlamaServerPolicy(gguf, ModelOptions(n_ctx=512, n_threads=1))

    async def turn():
        try:
            return await policy.complete([{"role": "user", "content": "Say hi."}], [],
                                         SamplingParams(temperature=0.0, top_p=1.0, max_tokens=4))
        finally:
            server = policy.shared.server
            assert server is not None
            await asyncio.to_thread(assert_owner_only, server.url, server.api_key, server.proc.pid)
            await policy.aclose()

    assert asyncio.run(turn()).content is not None  # the policy itself sends the key
    other = LlamaServerPolicy(gguf, ModelOptions(n_ctx=256, n_threads=1))  # another server: another key
    assert other.shared.api_key != policy.shared.api_key and len(other.shared.api_key) >= 32
    asyncio.run(other.aclose())


def test_serve_model_prints_a_random_key_or_takes_one(topoeval_cmd, tmp_path):
    from topoeval.models.llama_server import free_port

    for given in (None, "my-own-key-0123456789"):
        port = free_port()
        env = {**os.environ, **({"TOPOEVAL_SERVE_API_KEY": given} if given else {})}
        log = tmp_path / f"serve-{port}.log"
        with open(log, "w") as err:
            proc = subprocess.Popen([*topoeval_cmd, "serve-model", "--port", str(port), "--slots", "1",
                                     "--n-ctx", "512", "--threads", "1"], stderr=err, stdout=subprocess.DEVNULL,
                                    env=env)
        try:
            deadline = time.monotonic() + 180
            while "Bearer" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
            text = log.read_text()
            key = given or re.search(r"Bearer (\S+)\)", text).group(1)
            assert given is None or given not in text  # a key the user gave is not echoed
            servers = [p for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == proc.pid]
            assert_owner_only(f"http://127.0.0.1:{port}", key, int(servers[0]))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


def _parent(pid: int) -> int:
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


WIKI_2 = """\
name: wiki2
train: {name: wiki, suite: wiki}
test:
  - {name: wiki, role: id, suite: wiki}
tasks:
  test: {n: 2, seed: 1}
limits: {max_turns: 6}
"""


def _episodes(folder) -> dict[str, dict]:
    return {e["task_id"]: e for e in map(json.loads, (folder / "episodes.jsonl").read_text().splitlines())}


@pytest.mark.slow
def test_a_served_adapter_scores_as_it_does_by_name(topoeval_cmd, tmp_path):
    """Issue 60: `serve-model --adapter smollm2-135m-wiki` then `-m direct:smollm2-135m-wiki` gives the episodes
    `-m smollm2-135m-wiki` gives (the call layout it was trained with, not the chat template in which it made no
    call and scored 0), token for token with one slot."""
    from topoeval.models.llama_server import free_port

    protocol = tmp_path / "wiki2.yaml"
    protocol.write_text(WIKI_2)
    env = {**os.environ, "TOPOEVAL_LOCAL_THREADS": "1"}
    run = [*topoeval_cmd, "run", str(protocol), "--no-progress", "--no-cache"]
    subprocess.run([*run, "-m", "smollm2-135m-wiki", "--out", str(tmp_path / "by-name")], env=env, check=True,
                   capture_output=True, timeout=300)
    port, key = free_port(), "served-key-0123456789"
    log = tmp_path / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([*topoeval_cmd, "serve-model", "smollm2-135m", "--adapter", "smollm2-135m-wiki",
                                 "--port", str(port), "--slots", "1"], stderr=err, stdout=subprocess.DEVNULL,
                                env={**env, "TOPOEVAL_SERVE_API_KEY": key})
    try:
        deadline = time.monotonic() + 180
        while "Bearer" not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert "-m direct:smollm2-135m-wiki" in log.read_text()  # the start-up line names what to run
        subprocess.run([*run, "-m", "direct:smollm2-135m-wiki", "--api-base", f"http://127.0.0.1:{port}/v1",
                        "--api-key", key, "--concurrency", "1", "--out", str(tmp_path / "served")], env=env,
                       check=True, capture_output=True, timeout=300)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    by_name, served = _episodes(tmp_path / "by-name"), _episodes(tmp_path / "served")
    assert sorted(by_name) == sorted(served) and len(served) == 2
    assert [by_name[t]["scores"] for t in sorted(by_name)] == [served[t]["scores"] for t in sorted(served)]
    assert all(e["scores"]["success"] == 1.0 for e in served.values())  # the adapter calls its tools when served
    assert [by_name[t]["messages"] for t in sorted(by_name)] == [served[t]["messages"] for t in sorted(served)]
