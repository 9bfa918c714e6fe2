"""``--concurrency`` never puts more of a model's episodes in flight than its backend's hard cap (a
local model's slots), and a local model's results do not depend on it (issue 48, item 4)."""

import asyncio
import json

import pytest

from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import Policy
from topoeval.runner.run import arun_episodes


class OneSlot(Policy):
    """Answers after a short wait, counting how many of its episodes were in flight at once."""

    name = "one-slot"
    concurrency = max_in_flight = 1

    def __init__(self):
        self.active, self.peak, self.seen = 0, 0, set()

    async def act(self, messages, tools, sampling, ctx):
        if ctx.key not in self.seen:  # the first turn of an episode
            self.seen.add(ctx.key)
            self.active += 1
            self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1  # answers at once: the episode ends on this turn
        return AssistantMessage(content="done")


@pytest.mark.parametrize("cache", [False, True])  # the response cache wraps the policy: the cap goes through
def test_concurrency_never_exceeds_the_backends_cap(tmp_path, echo_protocol, fixture_suites, cache):
    policy = OneSlot()
    run = asyncio.run(arun_episodes(echo_protocol(n=6), [policy], tmp_path / "run", concurrency=8,
                                    suites_dirs=[fixture_suites], cache=cache))
    assert run.new_episodes == 12 and len(policy.seen) >= 6  # echo-b repeats echo-a's requests: cached
    assert policy.peak == 1


#: what an episode is, without its timings
SAME = ("key", "status", "final_answer", "turns", "messages", "calls", "state_diff", "usage", "errors", "scores")


def episodes(run_dir):
    lines = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    return {r["key"]: {k: r.get(k) for k in SAME} for r in lines}


@pytest.mark.local_model
@pytest.mark.slow
def test_local_model_results_do_not_depend_on_concurrency(tmp_path):
    from tests.models.llama_procs import require_server

    require_server()
    settings = dict(tasks=3, shots=[0], max_turns=3, max_tokens=32, cache=False)
    reference = asyncio.run(arun_episodes("wiki_hops", ["smollm2-135m"], tmp_path / "c1", concurrency=1, **settings))
    wide = asyncio.run(arun_episodes("wiki_hops", ["smollm2-135m"], tmp_path / "c4", concurrency=4, **settings))
    assert reference.new_episodes == wide.new_episodes == 9 and reference.errors == 0
    assert episodes(tmp_path / "c4") == episodes(tmp_path / "c1")
