"""oracle-quit-early: half the oracle's plan, nothing irreversible, no answer."""

import asyncio

from topoeval.core.messages import AssistantMessage, ToolCall
from topoeval.core.policy import SamplingParams
from topoeval.core.suite import Effect, ToolSpec
from topoeval.policies.oracle import quit_early
from topoeval.policies.registry import known_models, make_policy
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import run_episode

SPECS = [ToolSpec(name="search", description="", effect=Effect.read, idempotent=True, parallel_safe=True),
         ToolSpec(name="pay", description="", effect=Effect.irreversible, idempotent=False, parallel_safe=False)]


def test_quit_early_cuts_a_turn_to_the_budget_and_before_anything_irreversible():
    step = AssistantMessage(tool_calls=[ToolCall.make("a", "search", {"q": "1"}), ToolCall.make("b", "search", {"q": "2"}),
                                        ToolCall.make("c", "search", {"q": "3"})])
    assert [c.id for c in quit_early(step, made=1, budget=3, tools=SPECS).tool_calls] == ["a", "b"]
    assert quit_early(step, made=3, budget=3, tools=SPECS) is None
    paying = AssistantMessage(tool_calls=[ToolCall.make("p", "pay", {"h": "H1"}), ToolCall.make("a", "search", {})])
    assert quit_early(paying, made=0, budget=9, tools=SPECS) is None


def test_quit_early_is_a_reference_policy_that_does_half_and_solves_nothing():
    assert "oracle-quit-early" in known_models()
    registry = SuiteRegistry()
    policy = make_policy("oracle-quit-early")
    for name in ("wiki", "travel"):
        suite = registry.get(name)
        irreversible = {t.name for t in suite.tools if t.effect == Effect.irreversible}
        for task in suite.tasks(suite.parse_params({}), "test", 0, 10):
            rec = asyncio.run(run_episode(policy=policy, suite=suite, task=task, system_prompt="", demos=[],
                                          limits=Limits(), sampling=SamplingParams(), sample=0, shots=0, labels={}))
            made = [c for c in rec["calls"] if c["status"] != "skipped"]
            assert len(made) == len(task.gold) // 2, task.id  # none on a one-node plan
            assert not any(c["name"] in irreversible for c in made)
            assert rec["scores"]["success"] == 0.0 and rec["final_answer"] == ""
            assert 0.0 < rec["scores"]["coverage"] < 1.0 or len(task.gold) == 1
            if len(task.gold) == 1:
                assert not made  # half of one call is none: the do-nothing agent, so success stays 0
