"""The policy interface: how many of a backend's episodes run at once."""

from topoeval.core.policy import Policy, episodes_in_flight


class _Backend(Policy):
    async def act(self, messages, tools, sampling, ctx):  # pragma: no cover - never called here
        raise NotImplementedError


def backend(concurrency: int, cap: int | None) -> Policy:
    p = _Backend()
    p.concurrency, p.max_in_flight = concurrency, cap
    return p


def test_concurrency_is_the_default_and_the_override_without_a_cap():
    assert episodes_in_flight(backend(64, None)) == 64
    assert episodes_in_flight(backend(64, None), 256) == 256
    assert episodes_in_flight(backend(64, None), 2) == 2


def test_a_hard_cap_wins_over_any_concurrency():
    one_slot = backend(1, 1)
    assert [episodes_in_flight(one_slot, c) for c in (None, 1, 4, 64)] == [1, 1, 1, 1]
    assert episodes_in_flight(backend(4, 4), 2) == 2  # a lower --concurrency still lowers it
    assert episodes_in_flight(backend(4, 4), 16) == 4


def test_a_turns_seed_depends_on_task_sample_and_turn_and_on_nothing_else():
    from topoeval.core.policy import SamplingParams

    base = SamplingParams(temperature=0.7, seed=0)
    seeds = {base.for_turn(task, sample, turn).seed
             for task in ("t1", "t2") for sample in range(4) for turn in range(6)}
    assert len(seeds) == 48 and all(0 <= s < 2**31 for s in seeds)  # llama.cpp reads 2**32 - 1 as "random"
    assert base.for_turn("t1", 2, 3) == base.for_turn("t1", 2, 3)
    assert SamplingParams(seed=1).for_turn("t1", 0, 0).seed != base.for_turn("t1", 0, 0).seed
    assert base.for_turn("t1", 0, 0).temperature == 0.7
    assert SamplingParams().for_turn("t1", 0, 0).seed is None  # no seed: the backend's own randomness
