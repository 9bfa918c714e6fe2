"""An episode always ends in a record, whatever its policy's replies hold: deep arguments are an
invalid call, and a reply the harness cannot apply, score or write is an ``error`` episode, never
the end of the run."""

import json

import pytest

import topoeval
from topoeval.core.messages import AssistantMessage, ToolCall, final
from topoeval.core.policy import Policy
from topoeval.core.suite import ToolSpec
from topoeval.runner import episode as episode_mod
from topoeval.runner.tool_exec import execute_call


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


class Deep(Policy):
    """Calls ``lookup`` with arguments nested ``depth`` deep, then answers."""

    name = "deep"

    def __init__(self, arguments: str):
        self.arguments = arguments

    async def act(self, messages, tools, sampling, ctx):
        if not any(m["role"] == "tool" for m in messages):
            return AssistantMessage(tool_calls=[ToolCall(id="c", name="lookup", arguments=self.arguments)])
        return final(ctx.task.answer)


def _lines(out):
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("arguments,why", [
    (_nested(300), "arguments nest 300 deep, more than the limit of 64"),  # model_dump: "Circular reference"
    ("[" * 150_000 + "]" * 150_000, "deep, more than the limit of 64"),  # json.loads: RecursionError (and cut)
])
def test_arguments_nested_past_the_limit_are_an_invalid_call_and_the_run_completes(tmp_path, echo_protocol,
                                                                                     fixture_suites, arguments, why):
    out = tmp_path / "run"
    res = topoeval.run_protocol(echo_protocol(n=2), [Deep(arguments)], out, suites_dirs=[fixture_suites])
    assert res.new_episodes == 4 and res.errors == 0
    for rec in _lines(out):
        call = rec["calls"][0]
        assert rec["status"] == "done" and call["status"] == "invalid" and why in call["error"]
    again = topoeval.run_protocol(echo_protocol(n=2), [Deep(arguments)], out, suites_dirs=[fixture_suites])
    assert (again.new_episodes, again.reused_episodes) == (0, 4)


def test_arguments_a_raised_limit_lets_through_are_still_refused_not_raised():
    """With the nesting limit raised past what Python can recurse, parsing and the schema check still refuse."""
    spec = ToolSpec(name="lookup", description="", parameters={
        "type": "object", "properties": {"a": {"$ref": "#"}}, "additionalProperties": False},
        effect="read", idempotent=True, parallel_safe=True)
    for depth in (900, 5000):
        call = ToolCall(id="c", name="lookup", arguments=_nested(depth))
        rec = execute_call(call, 0, {"lookup": spec}, world=None, max_depth=10**9)  # type: ignore[arg-type]
        assert rec.status == "invalid" and rec.error


@pytest.mark.parametrize("where,error", [
    ("record", ValueError("Circular reference detected")),
    ("step", RecursionError("maximum recursion depth exceeded")),
])
def test_a_reply_the_harness_cannot_apply_or_record_is_an_error_episode(tmp_path, echo_protocol, fixture_suites,
                                                                         monkeypatch, where, error):
    def boom(*args, **kwargs):
        raise error

    monkeypatch.setattr(episode_mod.EpisodeState, where, boom)
    out = tmp_path / "run"
    res = topoeval.run_protocol(echo_protocol(n=2), ["oracle"], out, suites_dirs=[fixture_suites])
    assert res.new_episodes == 4 and res.errors == 4
    assert all(r["status"] == "error" and type(error).__name__ in r["errors"][-1] for r in _lines(out))


def test_a_record_that_cannot_be_written_as_json_is_replaced_by_an_error_record(tmp_path, echo_protocol,
                                                                                 fixture_suites, monkeypatch):
    real = episode_mod.EpisodeState.record

    def unwritable(self, **labels):
        rec = real(self, **labels)
        rec["final_answer"] = {"not", "json"}  # a value json cannot write
        return rec

    monkeypatch.setattr(episode_mod.EpisodeState, "record", unwritable)
    out = tmp_path / "run"
    res = topoeval.run_protocol(echo_protocol(n=1), ["oracle"], out, suites_dirs=[fixture_suites])
    assert res.new_episodes == 2 and res.errors == 2
    assert all(r["status"] == "error" and "record: TypeError" in r["errors"][-1] for r in _lines(out))


class SeedLog(Policy):
    """Looks up once, then answers; notes the seed each turn was sent, by episode key and turn."""

    name = "seedlog"

    def __init__(self):
        self.seeds: dict[tuple[str, int], int | None] = {}

    async def act(self, messages, tools, sampling, ctx):
        turn = sum(m["role"] == "assistant" for m in messages)
        self.seeds[(ctx.key, turn)] = sampling.seed
        if turn == 0:
            return AssistantMessage(tool_calls=[ToolCall(id="c", name="lookup", arguments="{}")])
        return final(ctx.task.answer)


def test_every_turn_of_every_sample_of_every_task_draws_with_its_own_seed_and_a_rerun_with_the_same(
        tmp_path, echo_protocol, fixture_suites):
    """One seed per sample for every request made each sample a fixed pattern of random draws shared by
    all its tasks and turns: at k = 4, temperature 0.7, three samples of a peaked adapter read as greedy
    and one left the greedy path on most tasks (the wiki adapter's per-sample success 0.54, 0.08, 0.58, 0.58)."""
    protocol = echo_protocol(n=3, samples=2)
    protocol.write_text(protocol.read_text() + "sampling: {temperature: 0.7, seed: 0}\n")
    first, second = SeedLog(), SeedLog()
    topoeval.run_protocol(protocol, [first], tmp_path / "a", suites_dirs=[fixture_suites])
    topoeval.run_protocol(protocol, [second], tmp_path / "b", suites_dirs=[fixture_suites])
    # echo-b sends echo-a's requests word for word, so the run's reply cache answers them: 12 requests
    seeds = list(first.seeds.values())
    assert len(seeds) == 3 * 2 * 2 and None not in seeds and len(set(seeds)) == 12  # tasks × samples × turns
    assert second.seeds == first.seeds  # the same draws on a rerun: reproducible, and the cache still hits


def test_a_record_carries_the_tasks_expected_answer_where_the_suite_has_one(tmp_path):
    """A failed episode can show what was expected (issue 60): answer tasks record the suite's gold answer,
    state tasks None."""
    import topoeval
    from topoeval.runner.store import read_episodes

    topoeval.run_protocol("wiki_to_travel", ["noop"], tmp_path / "run", tasks=1, shots=[0])
    records = read_episodes(tmp_path / "run")
    wiki = [r for r in records if r["suite"] == "wiki"]
    travel = [r for r in records if r["suite"] == "travel"]
    assert wiki and travel
    assert all(isinstance(r["expected_answer"], str) and r["expected_answer"] for r in wiki)
    assert all(r["expected_answer"] is None for r in travel)
