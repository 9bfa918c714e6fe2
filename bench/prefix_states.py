"""What a saved prefix state saves: an episode's first request with and without it.

    .venv/bin/python bench/prefix_states.py            (about 30 s on 2 cores)

The embedded SmolLM2-135M on its llama-server (1 slot), the first requests of 6 wiki episodes
(system prompt, tools, the task; 1 generated token), each a new episode: computed from scratch
(``local_prefix_states=False``, the reference) and with the saved state of the shared prefix restored
into the slot first (the default); then the restore alone, timed 10 times. One warm-up episode per
path comes first (the server start, and on the second path the state's one computation and save).
"""

from __future__ import annotations

import asyncio
import time

from local_models import first_turns  # bench/, the script's own folder (it puts the checkout on sys.path)


async def first_requests(prefix_states: bool, convs, tools) -> tuple[float, float | None]:
    """Seconds per first request, and (with prefix states) seconds per restore alone."""
    from topoeval.core.policy import SamplingParams
    from topoeval.models.options import ModelOptions
    from topoeval.models.replicas import CURRENT_EPISODE
    from topoeval.policies.registry import make_policy

    policy = make_policy("smollm2-135m", ModelOptions(local_slots=1, local_prefix_states=prefix_states))
    one = SamplingParams(max_tokens=1)
    try:
        CURRENT_EPISODE.set("warm-up")
        await policy.complete(convs[0], tools, one)
        t0 = time.perf_counter()
        for i, conv in enumerate(convs):
            CURRENT_EPISODE.set(f"episode-{i}")
            await policy.complete(conv, tools, one)
        first = (time.perf_counter() - t0) / len(convs)
        restore = None
        if prefix_states:
            name = next(iter(policy.shared.prefixes.saved))
            t0 = time.perf_counter()
            for _ in range(10):
                await policy._post_server(policy.shared.server, "/slots/0?action=restore", {"filename": name})
            restore = (time.perf_counter() - t0) / 10
        return first, restore
    finally:
        await policy.aclose()


def main() -> None:
    _, convs, tools, _ = first_turns()
    scratch, _ = asyncio.run(first_requests(False, convs, tools))
    saved, restore = asyncio.run(first_requests(True, convs, tools))
    print("first request of a new wiki episode (1 token), 6 episodes, 1 slot:")
    print(f"  from scratch                : {scratch * 1000:7.0f} ms (reference)")
    print(f"  saved prefix state restored : {saved * 1000:7.0f} ms  x{saved / scratch:.2f}")
    print(f"  the restore alone           : {restore * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
