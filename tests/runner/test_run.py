"""The runner: episodes on disk as they end, run.json, summary.json, resume, kills and Ctrl-C."""

import json
import os
import signal
import subprocess
import time
from collections import Counter

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, ToolCall, final
from topoeval.core.policy import Policy


def lines(run_dir):
    return [json.loads(l) for l in (run_dir / "episodes.jsonl").read_text().splitlines()]


def test_run_writes_run_json_summary_and_episodes(tmp_path, echo_protocol, fixture_suites):
    out = tmp_path / "run"
    res = topoeval.run_protocol(echo_protocol(n=4, samples=2), ["oracle", "noop"], out, suites_dirs=[fixture_suites])
    assert res.new_episodes == 2 * 2 * 4 * 2
    meta = json.loads((out / "run.json").read_text())
    for key in ("protocol", "protocol_sha256", "task_set_sha256", "models", "seeds", "topoeval_version", "git_commit", "started", "ended"):
        assert key in meta
    assert meta["models"] == ["oracle", "noop"] and meta["ended"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["schema"] == 6 and summary["protocol"] == "echo_proto"
    cell = res.cell("oracle", "echo-b")
    assert cell["role"] == "ood" and cell["n_tasks"] == 4 and cell["n_episodes"] == 8
    success = cell["metrics"]["success"]
    assert (success["mean"], success["std"], success["n"], success["ci95"]) == (1.0, 0.0, 4, [1.0, 1.0])
    assert success["pass@k"] == {"1": 1.0, "2": 1.0} and success["pass^k"] == {"1": 1.0, "2": 1.0}
    assert cell["ties"] == []  # noop is the only other model on echo-b, and it scores 0
    assert res.cell("noop", "echo-a")["metrics"]["success"]["mean"] == 0.0
    ep = lines(out)[0]
    for key in ("messages", "calls", "state_diff", "usage", "wall_s", "errors", "scores", "status", "final_answer"):
        assert key in ep


def test_same_command_resumes_without_rerunning(tmp_path, echo_protocol, fixture_suites):
    out = tmp_path / "run"
    proto = echo_protocol(n=3)
    first = topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    again = topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    assert (first.new_episodes, again.new_episodes, again.reused_episodes) == (6, 0, 6)
    assert len(lines(out)) == 6
    with pytest.raises(UserError, match="different task set"):
        topoeval.run_protocol(proto, ["oracle"], out, tasks=5, suites_dirs=[fixture_suites])


def test_torn_last_line_is_dropped_and_rerun(tmp_path, echo_protocol, fixture_suites):
    out = tmp_path / "run"
    proto = echo_protocol(n=3)
    topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    path = out / "episodes.jsonl"
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # a kill in the middle of the last write
    res = topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    assert res.new_episodes == 1
    keys = [r["key"] for r in lines(out)]
    assert len(keys) == 6 == len(set(keys))


def test_default_run_folder_is_deterministic_and_under_the_current_folder(tmp_path, echo_protocol, fixture_suites,
                                                                          monkeypatch):
    proto = echo_protocol(n=2)
    monkeypatch.chdir(tmp_path)  # results/<protocol>/<run-id>/ where the user is, never inside the package
    a = topoeval.run_protocol(proto, ["oracle"], suites_dirs=[fixture_suites])
    b = topoeval.run_protocol(proto, ["oracle"], suites_dirs=[fixture_suites])
    assert a.run_dir == b.run_dir and a.run_dir.resolve().parent == tmp_path / "results" / "echo_proto"
    assert b.new_episodes == 0


def test_run_json_records_topoevals_own_commit_from_its_checkout(tmp_path, echo_protocol, fixture_suites):
    from topoeval.core.provenance import source_checkout

    root = source_checkout()
    if root is None:
        pytest.skip("topoeval is not imported from its git checkout here")
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    topoeval.run_protocol(echo_protocol(n=1), ["oracle"], tmp_path / "run", suites_dirs=[fixture_suites])
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["git_commit"] == head and isinstance(meta["git_dirty"], bool) and meta["topoeval_version"] == topoeval.__version__


class Scripted(Policy):
    """Emits broken calls, then a good one, then answers."""

    name = "scripted"

    async def act(self, messages, tools, sampling, ctx):
        n = sum(1 for m in messages if m["role"] == "assistant")
        key = ctx.task.gold[0].arguments["key"]
        if n == 0:
            return AssistantMessage(tool_calls=[
                ToolCall(id="a", name="lookup", arguments='{"key": '),           # bad JSON
                ToolCall(id="b", name="fetch", arguments='{"key": "x"}'),        # unknown tool
                ToolCall(id="c", name="lookup", arguments='{"key": 5}'),         # wrong type
                ToolCall(id="d", name="lookup", arguments='{"key": "nope"}'),    # world refuses
            ])
        if n == 1:
            return AssistantMessage(tool_calls=[ToolCall.make("e", "lookup", {"key": key})])
        return final(ctx.task.answer)


class Exploding(Policy):
    name = "exploding"

    async def act(self, messages, tools, sampling, ctx):
        raise ConnectionError("server went away")


def test_malformed_calls_and_backend_failures_are_recorded(tmp_path, echo_protocol, fixture_suites):
    out = tmp_path / "run"
    res = topoeval.run_protocol(echo_protocol(n=2), [Scripted(), Exploding()], out, suites_dirs=[fixture_suites])
    cell = res.cell("scripted", "echo-a")
    assert cell["metrics"]["success"]["mean"] == 1.0
    assert cell["metrics"]["invalid_calls"]["mean"] == 3.0
    assert cell["metrics"]["tool_errors"]["mean"] == 1.0
    boom = res.cell("exploding", "echo-a")
    # a backend failure is infrastructure, not the model's answer: counted, never scored
    assert boom["status"] == {"error": 2} and boom["n_errors"] == 2 and boom["incomplete"]
    assert boom["metrics"] == {} and boom["episode_ids"] == [] and len(boom["error_episode_ids"]) == 2
    assert boom["ties"] == [] and not cell["incomplete"] and cell["n_errors"] == 0
    errs = [r for r in lines(out) if r["model"] == "exploding"]
    assert all("ConnectionError: server went away" in r["errors"][0] for r in errs)
    assert res.errors == 4


class Flaky(Policy):
    """The oracle behind a backend that fails for the tasks in ``down`` (odd task indices by default)."""

    name = "flaky"

    def __init__(self, down=lambda task_id: int(task_id.split("/")[-1].split("-")[0]) % 2 == 1):
        from topoeval.policies.reference import OraclePolicy

        self.down, self.oracle = down, OraclePolicy()

    async def act(self, messages, tools, sampling, ctx):
        if self.down(ctx.task.id):
            raise ConnectionError("backend down")
        return await self.oracle.act(messages, tools, sampling, ctx)


def test_a_context_window_overflow_is_the_models_limit_not_an_error(tmp_path, echo_protocol, fixture_suites):
    from topoeval.core.policy import ContextLimitError

    class Outgrown(Policy):
        name = "outgrown"

        async def act(self, messages, tools, sampling, ctx):
            if any(m["role"] == "assistant" for m in messages):
                raise ContextLimitError("HTTP 400: This model's maximum context length is 8192 tokens")
            return AssistantMessage(tool_calls=[ToolCall.make("a", "lookup", {"key": ctx.task.gold[0].arguments["key"]})])

    res = topoeval.run_protocol(echo_protocol(n=2), [Outgrown()], tmp_path / "r", suites_dirs=[fixture_suites])
    cell = res.cell("outgrown", "echo-a")
    assert cell["status"] == {"limit:context_window": 2} and cell["n_errors"] == 0 and res.errors == 0
    assert cell["metrics"]["success"]["mean"] == 0.0 and cell["metrics"]["success"]["n"] == 2  # scored, as a failure


def test_errored_episodes_are_left_out_of_the_scores_and_rerun(tmp_path, echo_protocol, fixture_suites):
    from topoeval.runner.store import EpisodeStore, read_episodes

    out, proto = tmp_path / "run", echo_protocol(n=4)
    first = topoeval.run_protocol(proto, [Flaky()], out, suites_dirs=[fixture_suites])
    cell = first.cell("flaky", "echo-a")
    assert first.errors == 4 and cell["n_errors"] == 2 and cell["incomplete"] and cell["n_episodes"] == 4
    # the mean is over the two episodes the model answered, not diluted by the two the backend lost
    assert cell["metrics"]["success"]["mean"] == 1.0 and cell["metrics"]["success"]["n"] == 2
    assert cell["metrics"]["success"]["pass@k"] == {"1": 1.0} and len(cell["episode_ids"]) == 2
    failed = {r["key"] for r in lines(out) if r["status"] == "error"}
    # the same command again: exactly the errored episodes run, the finished ones are kept
    again = topoeval.run_protocol(proto, [Flaky(down=lambda task_id: False)], out, suites_dirs=[fixture_suites])
    assert (again.new_episodes, again.reused_episodes, again.errors) == (4, 4, 0)
    assert [r["key"] for r in lines(out)[8:]] and {r["key"] for r in lines(out)[8:]} == failed
    cell = again.cell("flaky", "echo-a")
    assert not cell["incomplete"] and cell["n_errors"] == 0 and cell["metrics"]["success"]["n"] == 4
    # the latest record of a key wins, also when a torn line makes the store rewrite the file
    with open(out / "episodes.jsonl", "a") as fh:
        fh.write('{"key": "flaky|0-sh')
    store = EpisodeStore(out)
    store.close()
    assert len(store.records) == 8 and all(r["status"] == "done" for r in store.records.values())
    assert len(read_episodes(out)) == 8 and len(lines(out)) == 12
    third = topoeval.run_protocol(proto, [Flaky()], out, suites_dirs=[fixture_suites])
    assert (third.new_episodes, third.errors) == (0, 0)


def test_limits_end_episodes(tmp_path, echo_protocol, fixture_suites):
    class Looper(Policy):
        name = "looper"

        async def act(self, messages, tools, sampling, ctx):
            return AssistantMessage(tool_calls=[ToolCall.make("x", "lookup", {"key": "k"})] * 3)

    proto = topoeval.load_protocol(echo_protocol(n=1), __import__("topoeval.protocol.discovery").protocol.discovery.SuiteRegistry([fixture_suites]))
    proto.limits.max_turns = 4
    res = topoeval.run_protocol(proto, [Looper()], tmp_path / "a", suites_dirs=[fixture_suites])
    assert res.cell("looper", "echo-a")["status"] == {"limit:max_turns": 1}
    proto.limits.max_tool_calls = 5
    res = topoeval.run_protocol(proto, [Looper()], tmp_path / "b", suites_dirs=[fixture_suites])
    assert res.cell("looper", "echo-a")["status"] == {"limit:max_tool_calls": 1}
    ep = lines(tmp_path / "b")[0]
    assert [c["status"] for c in ep["calls"]].count("skipped") == 1 and len(ep["calls"]) == 6


def test_unknown_model_is_one_line(tmp_path, echo_protocol, fixture_suites, topoeval_cmd):
    proc = subprocess.run(
        [*topoeval_cmd, "run", str(echo_protocol()), "--model", "gpt-9", "--suites-dir", str(fixture_suites), "--out", str(tmp_path / "r")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: unknown model 'gpt-9'; known: noop, oracle, oracle-collateral, oracle-no-ask, oracle-no-priority, oracle-quit-early, "
        "oracle-reckless, oracle-redundant, oracle-serial, random (reference policies), smollm2-135m (embedded base), "
        "smollm2-135m-travel, smollm2-135m-wiki, smollm2-135m-wiki-grpo (its adapters), or "
        "provider/model, "
        "direct:NAME, gguf:PATH, hf:PATH (`topoeval models` lists them all, with the tool-call formats)"
    )


def _wait_for_lines(path, n, proc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("run made no progress")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_killed_run_resumes_with_every_episode_exactly_once(tmp_path, echo_protocol, fixture_suites, topoeval_cmd, sig):
    out = tmp_path / "run"
    proto = echo_protocol(n=20, delay=0.05)
    cmd = [*topoeval_cmd, "run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out), "--concurrency", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_lines(out / "episodes.jsonl", 5, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    if sig in (signal.SIGINT, signal.SIGTERM):
        assert proc.returncode == 130 and "run the same command again to resume" in err and "Traceback" not in err
    done_before = len(lines(out))
    assert 5 <= done_before < 40
    finished = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    keys = Counter(r["key"] for r in lines(out))
    assert len(keys) == 40 and set(keys.values()) == {1}
    assert f"{40 - done_before} new episodes, {done_before} resumed" in finished.stdout


def test_fewshot_demos_are_oracle_episodes_from_the_fewshot_split(tmp_path):
    res = topoeval.run_protocol("wiki_to_travel", ["oracle"], tmp_path / "r", tasks=3)
    eps = lines(tmp_path / "r")
    evaluated = {r["task_id"] for r in eps}
    for r in eps:
        zero = next(z for z in eps if z["task_id"] == r["task_id"] and z["shots"] == 0)
        # the oracle does the same thing whatever demos precede the task
        assert [c["name"] for c in r["calls"]] == [c["name"] for c in zero["calls"]]
        assert (r["n_demo_messages"] > 0) == (r["shots"] > 0)
        assert len(r["demo_task_ids"]) == r["shots"]
        assert all("/fewshot/" in d for d in r["demo_task_ids"]) and not set(r["demo_task_ids"]) & evaluated
    for shots in (1, 2, 4):
        assert res.cell("oracle", "travel", f"{shots}-shot")["metrics"]["success"]["mean"] == 1.0
    assert all("/fewshot/" not in t for t in evaluated)


def test_shots_keeps_only_the_chosen_baselines(tmp_path):
    res = topoeval.run_protocol("wiki_to_travel", ["oracle"], tmp_path / "r", tasks=1, shots=[0, 2, 3])
    assert sorted({c["baseline"] for c in res.cells}) == ["0-shot", "2-shot"]
    with pytest.raises(UserError, match="none is among"):
        topoeval.run_protocol("wiki_to_travel", ["oracle"], tmp_path / "r2", tasks=1, shots=[3])


def test_direct_path_needs_an_api_base(tmp_path):
    with pytest.raises(UserError, match="needs an API base.*model_options.api_base"):
        topoeval.run_protocol("wiki_hops", ["direct:some-model"], tmp_path / "r", tasks=1)


def test_a_wrong_cell_lookup_names_what_the_run_has(tmp_path, echo_protocol, fixture_suites):
    from topoeval.api import UnknownCell

    res = topoeval.run_protocol(echo_protocol(n=1), ["oracle", "noop"], tmp_path / "run", suites_dirs=[fixture_suites])
    assert (res.models, res.topologies, res.baselines) == (["oracle", "noop"], ["echo-a", "echo-b"], ["0-shot"])
    with pytest.raises(UnknownCell, match="no topology 'echo-c' \\(did you mean 'echo-[ab]'\\?\\); its topologies: echo-a, echo-b"):
        res.cell("oracle", "echo-c")
    with pytest.raises(KeyError, match="no model 'orcale' \\(did you mean 'oracle'\\?\\); its models: oracle, noop; "
                                       "no baseline '1-shot'.*its baselines: 0-shot"):
        res.cell("orcale", "echo-a", "1-shot")


class Counting(Policy):
    """Answers right after a short wait, counting the episodes it has in flight at once."""

    def __init__(self, name: str):
        self.name, self.now, self.peak = name, 0, 0

    async def act(self, messages, tools, sampling, ctx):
        import asyncio

        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.002)
        self.now -= 1
        return final(ctx.task.answer)


def test_episodes_are_fed_task_by_task_each_task_made_once_and_in_flight_bounded(tmp_path, echo_protocol,
                                                                                 fixture_suites, monkeypatch):
    """A big run never holds all its episodes or tasks: each task is made once for the pass that hashes
    the set and once for all its episodes (2 models x 2 samples), and no model has more episodes in flight
    than --concurrency allows."""
    from topoeval.core.suite import Suite

    made: Counter = Counter()
    real_iter = Suite.iter_tasks

    def counting_iter(self, params, split, seed, n):
        for task in real_iter(self, params, split, seed, n):
            made["pass", task.id] += 1
            yield task

    monkeypatch.setattr(Suite, "iter_tasks", counting_iter)
    from topoeval.protocol.discovery import SuiteRegistry

    cls = type(SuiteRegistry([fixture_suites]).get("echo"))
    real_generate = cls.generate
    monkeypatch.setattr(cls, "generate", lambda self, *a: (made.update([("run", a[-1])]), real_generate(self, *a))[1])
    a, b = Counting("a"), Counting("b")
    res = topoeval.run_protocol(echo_protocol(n=6, samples=2), [a, b], tmp_path / "run", suites_dirs=[fixture_suites],
                                concurrency=3)
    assert res.new_episodes == 2 * 2 * 6 * 2
    assert sum(n for (kind, _), n in made.items() if kind == "pass") == 12  # 6 tasks x 2 topologies, each once
    # generate(): once per task for the pass (iter_tasks calls it) and once for its four episodes
    assert sum(n for (kind, _), n in made.items() if kind == "run") == 2 * 12
    assert 1 <= a.peak <= 3 and 1 <= b.peak <= 3


def test_running_another_protocol_into_a_folder_is_refused_naming_both_protocols(tmp_path, echo_protocol,
                                                                                  fixture_suites):
    out, proto = tmp_path / "run", echo_protocol(n=1)
    topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    other = tmp_path / "other.yaml"  # another protocol whose limits differ too (the old refusal named max_turns)
    other.write_text(proto.read_text().replace("name: echo_proto", "name: echo_other") + "limits: {max_turns: 3}\n")
    with pytest.raises(UserError) as refused:
        topoeval.run_protocol(other, ["oracle"], out, suites_dirs=[fixture_suites])
    message = str(refused.value)
    assert "'echo_proto'" in message and "'echo_other'" in message and "max_turns" not in message
    edited = tmp_path / "edited.yaml"  # the same protocol, edited: its name is given with the refusal
    edited.write_text(proto.read_text().replace("fewshot: {n: 4, seed: 2}", "fewshot: {n: 4, seed: 3}"))
    with pytest.raises(UserError, match="another version of protocol 'echo_proto'"):
        topoeval.run_protocol(edited, ["oracle"], out, suites_dirs=[fixture_suites])
