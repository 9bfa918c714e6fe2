"""--executor ray on a local Ray instance (num_cpus=2): the shards as Ray tasks, their records written
by the driver, a worker that dies retried by Ray, and only missing keys re-run."""

import json
import os

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'topoeval[ray]'; make install does it)")

import topoeval  # noqa: E402
from topoeval.core.messages import final  # noqa: E402
from topoeval.core.policy import Policy  # noqa: E402
from topoeval.runner.store import read_records  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    os.environ.pop("RAY_ADDRESS", None)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_shards_as_ray_tasks_give_the_unsharded_summary(local_ray, tmp_path, echo_protocol, fixture_suites):
    proto = echo_protocol(n=10, samples=2)
    models = ["oracle", "random"]
    topoeval.run_protocol(proto, models, tmp_path / "a" / "run", suites_dirs=[fixture_suites])
    out = tmp_path / "b" / "run"
    res = topoeval.run_protocol(proto, models, out, suites_dirs=[fixture_suites], executor="ray", workers=2)
    assert res.new_episodes == 2 * 2 * 10 * 2
    assert (out / "summary.json").read_bytes() == (tmp_path / "a" / "run" / "summary.json").read_bytes()
    shard_keys = [set(read_records(out / f"episodes.shard-{i}-of-2.jsonl")) for i in (1, 2)]
    assert all(shard_keys) and not shard_keys[0] & shard_keys[1]  # both tasks ran, disjoint keys
    # only what is missing runs again: drop three episodes of shard 2, then the same command
    path = out / "episodes.shard-2-of-2.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-3]) + "\n")
    (out / "episodes.jsonl").unlink()
    again = topoeval.run_protocol(proto, models, out, suites_dirs=[fixture_suites], executor="ray", workers=2)
    assert (again.new_episodes, again.reused_episodes) == (3, res.new_episodes - 3)
    assert (out / "summary.json").read_bytes() == (tmp_path / "a" / "run" / "summary.json").read_bytes()


def test_a_worker_that_dies_is_retried_by_ray(local_ray, tmp_path, echo_protocol, fixture_suites):
    marker = tmp_path / "died-once"

    class DiesOnce(Policy):  # defined here, so Ray sends it by value; it kills its worker process once
        name = "dies-once"

        async def act(self, messages, tools, sampling, ctx):
            if not marker.exists():
                marker.write_text("x")
                os._exit(1)
            return final("no idea")

    out = tmp_path / "run"
    res = topoeval.run_protocol(echo_protocol(n=4), [DiesOnce()], out, suites_dirs=[fixture_suites], executor="ray",
                                workers=1)
    assert marker.exists() and res.new_episodes == 8
    summary = json.loads((out / "summary.json").read_text())
    assert sum(c["n_episodes"] for c in summary["cells"]) == 8


def test_the_api_key_reaches_ray_tasks_through_their_environment_not_their_arguments(local_ray, tmp_path,
                                                                                      echo_protocol, fixture_suites,
                                                                                      monkeypatch):
    """The key is not in what a task is pickled with (issue 43); the task still sends it (a real local
    server records the Authorization header of every request, the tasks' included)."""
    import cloudpickle
    from aiohttp import web

    from tests.chat_server import ThreadedChatServer
    from topoeval.models.options import ModelOptions

    secret = "sk-topoevalRayKey0123456789"

    class KeyServer(ThreadedChatServer):
        def __init__(self):
            self.auth: list[str | None] = []
            self.start()

        async def _chat(self, request):
            await request.read()
            self.auth.append(request.headers.get("Authorization"))
            return web.json_response({"choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": "no idea"}}],
                                      "usage": {"prompt_tokens": 1, "completion_tokens": 1}})

    sent: list[bytes] = []
    real_remote = ray.remote

    class Recording:  # a remote function whose calls' arguments are pickled here as Ray pickles them
        def __init__(self, made):
            self.made = made

        def remote(self, *task_args):
            sent.append(cloudpickle.dumps(task_args))
            return self.made.remote(*task_args)

    def recording_remote(*args, **kwargs):  # ray.remote(**options)(fn), as ray_executor calls it
        decorate = real_remote(*args, **kwargs)
        return lambda fn: Recording(decorate(fn))

    monkeypatch.setattr(ray, "remote", recording_remote)
    server = KeyServer()
    try:
        res = topoeval.run_protocol(echo_protocol(n=2), ["direct:m"], tmp_path / "run", suites_dirs=[fixture_suites],
                                    executor="ray", workers=2,
                                    model_options=ModelOptions(api_base=server.api_base, api_key=secret))
    finally:
        server.stop()
    assert res.new_episodes == 4 and res.errors == 0
    assert len(sent) == 2 and all(secret.encode() not in blob for blob in sent)
    assert len(server.auth) >= 5 and set(server.auth) == {f"Bearer {secret}"}  # preflight + the tasks' requests
