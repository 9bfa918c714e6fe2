"""Multi-turn tasks in the runner: instructions sent one at a time, the world carried over, limits
per instruction and per episode, turn boundaries as events, withheld tools, demos."""

import asyncio
from typing import Any

from pydantic import BaseModel

from topoeval.core.gold import critical_path, dag_levels
from topoeval.core.messages import calls, final
from topoeval.core.policy import Policy, SamplingParams
from topoeval.core.suite import (GoldCall, Instruction, Suite, SuiteManifest, Task, ToolError, ToolSpec,
                                 TopologyDescriptor, World)
from topoeval.policies.reference import episode_messages
from topoeval.protocol.schema import Limits, TopologySpec
from topoeval.protocol.topology import resolve
from topoeval.runner.demos import demo_messages
from topoeval.runner.episode import EpisodeState, run_episode


class Counter(World):
    """A counter the user asks to bump; records which instructions were handed back."""

    def __init__(self):
        self.events: list[dict[str, Any]] = []
        self.value = 0
        self.ended: list[tuple[int, int]] = []

    def call(self, name, arguments):
        if name == "bump":
            self.value += arguments.get("by", 1)
            return {"value": self.value}
        if name == "reset":
            self.value = 0
            return {"value": 0}
        raise ToolError(name)

    def snapshot(self):
        return {"value": self.value}

    def end_instruction(self, index):
        self.ended.append((index, self.value))


def _tool(name, effect="write"):
    return ToolSpec(name=name, description=name, effect=effect, idempotent=False, parallel_safe=False,
                    parameters={"type": "object", "properties": {"by": {"type": "integer"}}})


class CounterSuite(Suite):
    Params = BaseModel

    def generate(self, params, split, seed, index):
        raise NotImplementedError

    def make_world(self, task):
        return Counter()

    def score(self, task, final_answer, world):
        return {"success": float(world.value == task.data["target"])}

    def oracle(self, task, messages, variant="oracle"):
        raise NotImplementedError


SUITE = CounterSuite(SuiteManifest(
    name="counter", description="d", world="x:y", tools=[_tool("bump"), _tool("reset")],
    topology=TopologyDescriptor(state="stateful", reversibility="all_reversible", user="none", ordering="flat",
                                dependency="serial", schema_name="c", answer_channel="state",
                                instructions="sequential")))
TASK = Task(id="counter/test/0", suite="counter", split="test", index=0, family="f", prompt="bump by 2",
            instructions=[Instruction(content="now bump by 3"), Instruction(content="reset it", tools_added=["reset"])],
            withheld_tools=["reset"], data={"target": 0},
            gold=[GoldCall(id="a", tool="bump", arguments={"by": 2}),
                  GoldCall(id="b", tool="bump", arguments={"by": 3}, instruction=1),
                  GoldCall(id="c", tool="reset", arguments={}, instruction=2)])


def test_next_instruction_comes_when_the_agent_hands_back_and_the_world_carries_over():
    state = EpisodeState(SUITE, TASK, "s", [], Limits())
    assert [t["function"]["name"] for t in state.tools] == ["bump"]  # reset is withheld
    assert state.step(calls(("bump", {"by": 2})))[0]["role"] == "tool"
    out = state.step(final("done with that"))
    assert out == [{"role": "user", "content": "now bump by 3"}] and not state.done
    state.step(calls(("reset", {})))  # not offered yet: an invalid call, the world never sees it
    assert state.calls[-1].status == "invalid"
    state.step(calls(("bump", {"by": 3})))
    assert state.step(final("ok"))[0]["content"] == "reset it"
    assert [t["function"]["name"] for t in state.tools] == ["bump", "reset"]
    state.step(calls(("reset", {})))
    assert state.step(final("all done")) == [] and state.status == "done"
    assert state.world.ended == [(0, 2), (1, 5), (2, 0)]
    record = state.record()
    assert record["scores"]["success"] == 1.0 and record["user_turns"] == 3
    assert [e for e in record["events"] if e["type"] == "instruction"] == [
        {"type": "instruction", "index": 1, "turn": 2}, {"type": "instruction", "index": 2, "turn": 5}]
    assert [m["content"] for m in record["messages"] if m["role"] == "user"] == TASK.user_turns()
    # the oracle's plan order: acting before an instruction is given is a serial violation
    assert record["scores"]["serial_violations"] == 0


def test_acting_before_the_instruction_is_a_serial_violation():
    state = EpisodeState(SUITE, TASK, "s", [], Limits())
    state.step(calls(("bump", {"by": 2}), ("bump", {"by": 3})))  # the second one was not asked for yet
    assert state.record()["scores"]["serial_violations"] == 1


def test_limits_per_instruction_and_per_episode():
    state = EpisodeState(SUITE, TASK, "s", [], Limits(max_turns_per_instruction=2))
    state.step(calls(("bump", {"by": 1})))
    state.step(calls(("bump", {"by": 1})))
    assert state.done and state.status == "limit:max_turns_per_instruction"
    assert state.world.ended == []  # a cut instruction is not handed back
    state = EpisodeState(SUITE, TASK, "s", [], Limits(max_turns=3, max_turns_per_instruction=2))
    state.step(calls(("bump", {"by": 2})))
    state.step(final("next"))  # the per-instruction count restarts with each instruction
    state.step(calls(("bump", {"by": 3})))
    assert state.done and state.status == "limit:max_turns" and state.record()["scores"]["success"] == 0.0


def test_single_instruction_tasks_keep_their_fingerprint_and_levels():
    plain = TASK.model_copy(update={"instructions": [], "withheld_tools": [],
                                    "gold": [g.model_copy(update={"instruction": 0}) for g in TASK.gold]})
    dump = plain.model_dump(mode="json")
    for key in ("instructions", "withheld_tools"):
        del dump[key]
    for node in dump["gold"]:
        del node["instruction"]
    import hashlib
    import json

    legacy = hashlib.sha256(json.dumps(dump, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert plain.fingerprint() == legacy != TASK.fingerprint()
    assert critical_path(plain.gold) == 1 and critical_path(TASK.gold) == 3
    assert [[g.id for g in level] for level in dag_levels(TASK.gold)] == [["a"], ["b"], ["c"]]


class Replayer(Policy):
    """Answers from the episode's own messages only: proves the demos' user turns do not confuse it."""

    name = "replayer"

    async def act(self, messages, tools, sampling, ctx):
        return ctx.suite.oracle(ctx.task, episode_messages(messages, ctx.task.prompt))


def test_multi_turn_demos_keep_every_instruction_and_the_oracle_still_solves(registry):
    topo = resolve(TopologySpec(name="t", suite="travel", transforms=[{"name": "split_instructions"}]), registry)
    from topoeval.protocol.schema import SplitSpec

    demos, ids = asyncio.run(demo_messages(topo, SplitSpec(n=4, seed=1), 2, seed_key="k"))
    assert len(ids) == 2 and sum(1 for m in demos if m["role"] == "user") == 6
    for task in topo.tasks("test", 0, 5):
        record = asyncio.run(run_episode(policy=Replayer(), suite=topo.suite, task=task, system_prompt="s",
                                         demos=demos, limits=Limits(max_turns=20), sampling=SamplingParams(),
                                         sample=0, shots=2, labels={}))
        assert record["scores"]["success"] == 1.0 and record["user_turns"] == 3
