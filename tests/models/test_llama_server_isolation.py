"""An episode's greedy tokens depend on the episode alone, not on what ran before it on the server.

Two ways they did not (issue 23's "six adapters on one server are not reproducible"), each provoked
here on a real llama-server, with the embedded model and the shipped adapters:

- llama-server's RAM prompt cache (``--cache-ram``, on by default) restores into a slot the KV state
  of the cached prompt that shares the longest prefix — saved from any slot, under any adapter. A
  slot of the wiki adapter then started from a state the travel adapter computed. topoeval starts
  its servers with ``--cache-ram 0``.
- A slot's own prompt cache reuses the prefix its previous request left (the system prompt every
  episode shares); the floats of that prefix depend on how it was batched then, so reusing it moved
  the next-token log-probabilities (by 1.6e-2 here). The policy sends an episode's first request
  with ``cache_prompt: false`` and reuses only the episode's own prefix after that; or it restores
  into the episode's slot a state of the prefix it shares with its cell, computed once alone and
  saved, before its first request, and reuses only that state and the episode's own KV after that.

(The saved prefix states are the default; ``local_prefix_states=False`` /
``TOPOEVAL_LOCAL_PREFIX_STATES=0`` computes each episode's first request from scratch.)
"""

import asyncio

import pytest

from tests.models.llama_procs import require_server

pytestmark = pytest.mark.local_model

SYSTEM = ("<|im_start|>system\nYou are a booking agent. Tools: search_flights(origin, destination, date), "
          "hold_seat(flight_id), pay(hold_id), ask_user(question). " * 12 + "<|im_end|>\n")
#: a booking request, and a long other prompt that shares (almost) nothing with it
P = SYSTEM + "<|im_start|>user\nBook me a flight from Lisbon to Oslo next week.<|im_end|>\n<|im_start|>assistant\n"
Q = ("<|im_start|>user\n" + "Tell me a long story about a lighthouse keeper and the sea. " * 60
     + "<|im_end|>\n<|im_start|>assistant\n")


@pytest.fixture(scope="module")
def loras():
    from topoeval.models.adapters import adapter_path

    require_server()
    try:
        return [adapter_path("smollm2-135m-wiki"), adapter_path("smollm2-135m-travel")]
    except Exception as exc:  # a checkout without the shipped adapters
        pytest.skip(str(exc))


def server(loras, *extra):
    from topoeval.models.embedded import embedded_gguf
    from topoeval.models.llama_server import LlamaServer
    from topoeval.models.llamacpp_build import server_binary

    return LlamaServer(server_binary(), embedded_gguf(), loras, slots=2, n_ctx=4096, n_threads=1, extra_args=extra)


def complete(srv, slot, prompt, adapter, cache_prompt=True, n=24):
    """Greedy tokens and their log-probabilities for one request on one slot, under adapter 0 or 1."""
    lora = [{"id": j, "scale": 1.0 if j == adapter else 0.0} for j in range(2)]
    r = srv.post_sync("/completion", {"prompt": prompt, "n_predict": n, "temperature": 0, "id_slot": slot,
                                      "cache_prompt": cache_prompt, "lora": lora, "n_probs": 1})
    return r["content"], [p["top_logprobs"][0]["logprob"] for p in r["completion_probabilities"]]


def wiki_after_q(loras, *extra, travel_first=False):
    """The wiki adapter's P on slot 0 after that slot held Q; with ``travel_first``, the travel adapter
    computed P on slot 1 before."""
    srv = server(loras, *extra)
    try:
        if travel_first:
            complete(srv, 1, P, adapter=1, n=4)
        complete(srv, 0, Q, adapter=0, n=4)
        return complete(srv, 0, P, adapter=0)
    finally:
        srv.stop()


def test_no_slot_starts_from_another_adapters_state(loras):
    # topoeval's server: what the travel adapter computed on another slot changes nothing
    assert wiki_after_q(loras, travel_first=True) == wiki_after_q(loras)
    # the provocation: llama-server's default RAM prompt cache hands the travel adapter's state over
    default_cache = ("--cache-ram", "8192")
    assert wiki_after_q(loras, *default_cache, travel_first=True) != wiki_after_q(loras, *default_cache)


def test_a_request_computed_from_scratch_does_not_depend_on_the_slot_before(loras):
    srv = server(loras)
    try:
        clean = complete(srv, 0, P, adapter=0)
        complete(srv, 0, Q, adapter=0, n=4)
        reused = complete(srv, 0, P, adapter=0)  # reuses the prefix Q left: other floats
        complete(srv, 0, Q, adapter=0, n=4)
        scratch = complete(srv, 0, P, adapter=0, cache_prompt=False)
    finally:
        srv.stop()
    assert reused[1] != clean[1]
    assert scratch == clean


def test_each_episode_starts_from_scratch_and_then_reuses_its_own_prefix(loras):
    """The policy's requests: an episode's first is sent with ``cache_prompt: false``, its later ones
    with ``true``; the next episode pinned to the slot starts from scratch again. Its replies are
    the same whichever episode ran in the slot before."""
    from topoeval.core.policy import SamplingParams
    from topoeval.models.options import ModelOptions
    from topoeval.models.replicas import CURRENT_EPISODE
    from topoeval.policies.registry import make_policy

    tools = [{"type": "function", "function": {"name": "search", "description": "Search Wikipedia.",
                                               "parameters": {"type": "object",
                                                              "properties": {"query": {"type": "string"}},
                                                              "required": ["query"]}}}]
    asks = {"e": [{"role": "system", "content": "Answer with the search tool."},
                  {"role": "user", "content": "Who wrote Solaris?"}],
            "f": [{"role": "system", "content": "Answer with the search tool."},
                  {"role": "user", "content": "Tell me about lighthouses. " * 40}]}

    async def episodes(order):
        policy = make_policy("smollm2-135m-wiki", ModelOptions(local_slots=1, local_prefix_states=False))
        sent, post = [], policy.post_json

        async def spy(path, body):
            sent.append((CURRENT_EPISODE.get(), body["cache_prompt"]))
            return await post(path, body)

        policy.post_json = spy
        replies = {}
        try:
            for key in order:
                token = CURRENT_EPISODE.set(key)
                try:
                    first = await policy.complete(asks[key], tools, SamplingParams(max_tokens=24))
                    follow_up = [*asks[key], {"role": "assistant", "content": "Let me look that up."},
                                 {"role": "user", "content": "And when?"}]  # extends the first prompt
                    again = await policy.complete(follow_up, tools, SamplingParams(max_tokens=24))
                    replies[key] = (first, again)
                finally:
                    CURRENT_EPISODE.reset(token)
        finally:
            await policy.aclose()
        return replies, sent

    alone, sent = asyncio.run(episodes(["e"]))
    after, sent_after = asyncio.run(episodes(["f", "e"]))
    assert after["e"] == alone["e"]
    for log in (sent, sent_after):
        for key in {k for k, _ in log}:
            flags = [flag for k, flag in log if k == key]
            assert flags[0] is False and all(flags[1:]) and len(flags) > 1, (key, flags)


def test_with_prefix_states_each_episode_starts_from_the_saved_prefix(loras, monkeypatch):
    """The policy's requests: before an episode's first, the saved state of the system prompt and
    tools is restored into its slot (computed once per server), so every request reuses the slot's
    KV (``cache_prompt: true``). An episode's replies are the same whichever episode ran in the slot
    before, and on a server that never ran another. (The default: no option given.)"""
    monkeypatch.delenv("TOPOEVAL_LOCAL_PREFIX_STATES", raising=False)
    from topoeval.core.policy import SamplingParams
    from topoeval.models.options import ModelOptions
    from topoeval.models.replicas import CURRENT_EPISODE
    from topoeval.policies.registry import make_policy

    tools = [{"type": "function", "function": {"name": "search", "description": "Search Wikipedia.",
                                               "parameters": {"type": "object",
                                                              "properties": {"query": {"type": "string"}},
                                                              "required": ["query"]}}}]
    asks = {"e": [{"role": "system", "content": "Answer with the search tool."},
                  {"role": "user", "content": "Who wrote Solaris?"}],
            "f": [{"role": "system", "content": "Answer with the search tool."},
                  {"role": "user", "content": "Tell me about lighthouses. " * 40}]}

    async def episodes(order):
        policy = make_policy("smollm2-135m-wiki", ModelOptions(local_slots=1))
        sent, post, server_post = [], policy.post_json, policy._post_server

        async def spy(path, body):
            sent.append((CURRENT_EPISODE.get(), body["cache_prompt"]))
            return await post(path, body)

        async def server_spy(server, path, body):
            sent.append((CURRENT_EPISODE.get(), path.split("action=")[-1]))
            return await server_post(server, path, body)

        policy.post_json, policy._post_server = spy, server_spy
        replies = {}
        try:
            for key in order:
                token = CURRENT_EPISODE.set(key)
                try:
                    first = await policy.complete(asks[key], tools, SamplingParams(max_tokens=24))
                    follow_up = [*asks[key], {"role": "assistant", "content": "Let me look that up."},
                                 {"role": "user", "content": "And when?"}]  # extends the first prompt
                    again = await policy.complete(follow_up, tools, SamplingParams(max_tokens=24))
                    replies[key] = (first, again)
                finally:
                    CURRENT_EPISODE.reset(token)
        finally:
            await policy.aclose()
        return replies, sent

    alone, sent = asyncio.run(episodes(["e"]))
    after, sent_after = asyncio.run(episodes(["f", "e"]))
    assert after["e"] == alone["e"]
    # alone: the prefix computed (from scratch), saved, restored; then the episode's own requests
    assert sent[:3] == [("e", False), ("e", "save"), ("e", "restore")]
    assert all(flag is True for _, flag in sent[3:]) and len(sent) > 4
    # after f: e restores the state f's first request saved, computes nothing
    e_log = [flag for k, flag in sent_after if k == "e"]
    assert e_log[0] == "restore" and all(flag is True for flag in e_log[1:]), e_log


def test_the_models_of_one_server_take_their_requests_in_turn(loras):
    """llama-server serves the first busy slot's adapter each iteration, so a model in a later slot
    group starved while earlier ones were busy (its requests timed out in a four-model collapse run).
    The policies of one server send one request at a time, first come first served."""
    from topoeval.core.policy import SamplingParams
    from topoeval.models.options import ModelOptions
    from topoeval.models.replicas import CURRENT_EPISODE
    from topoeval.policies.registry import make_policy

    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a river."}]

    async def run(names):
        policies = [make_policy(n, ModelOptions(local_slots=1)) for n in names]
        in_flight, peak, done = [0], [0], []
        for policy in policies:
            post = policy.post_json

            async def spy(path, body, post=post, name=policy.name):
                in_flight[0] += 1
                peak[0] = max(peak[0], in_flight[0])
                try:
                    return await post(path, body)
                finally:
                    in_flight[0] -= 1
                    done.append(name)

            policy.post_json = spy

        async def episode(policy, key):
            CURRENT_EPISODE.set(key)
            for _ in range(2):
                await policy.complete(messages, [], SamplingParams(max_tokens=12))

        try:
            await asyncio.gather(*(episode(p, f"{p.name}-{i}") for p in policies for i in range(2)))
        finally:
            for p in policies:
                await p.aclose()
        return peak[0], done

    peak, done = asyncio.run(run(["smollm2-135m", "smollm2-135m-wiki", "smollm2-135m-travel"]))
    assert peak == 1
    assert {"smollm2-135m", "smollm2-135m-wiki", "smollm2-135m-travel"} <= set(done[:6])  # no one waits for the rest


def test_a_dropped_prefix_state_is_recomputed_to_the_same_replies(loras):
    """Past its size limit a server keeps only the most recent prefix state; a cell met again
    computes its state again, and its episodes answer as they did."""
    from topoeval.core.policy import SamplingParams
    from topoeval.models.options import ModelOptions
    from topoeval.models.replicas import CURRENT_EPISODE
    from topoeval.policies.registry import make_policy

    cells = {"wiki": "Answer with facts from Wikipedia.", "travel": "Book flights for the user."}

    async def run():
        policy = make_policy("smollm2-135m-wiki", ModelOptions(local_slots=1, local_prefix_states=True))
        replies = []
        try:
            for i, cell in enumerate(["wiki", "travel", "wiki"]):
                CURRENT_EPISODE.set(f"{cell}-{i}")
                messages = [{"role": "system", "content": cells[cell]}, {"role": "user", "content": "Name a river."}]
                replies.append(await policy.complete(messages, [], SamplingParams(max_tokens=12)))
                policy.shared.prefixes.max_bytes = 1  # room for one state only
            states = policy.shared.prefixes
            return (replies, states.computed, states.restored, len(states.saved),
                    len(list(states.slot_dir.iterdir())), states.slot_dir)
        finally:
            await policy.aclose()

    replies, computed, restored, kept, files, slot_dir = asyncio.run(run())
    assert (computed, restored, kept, files) == (3, 3, 1, 1)
    assert not slot_dir.exists()  # the states go with their server
    assert replies[2] == replies[0]
