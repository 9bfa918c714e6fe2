"""The embedded SmolLM2-135M GGUF and its adapters through the llama-server topoeval runs.

Real server processes throughout (the portable build ``make install`` makes). Marked ``local_model``
(deselect with -m 'not local_model'); ``make test`` runs them.
"""

import asyncio
import json

import pytest

import topoeval
from tests.models.llama_procs import llama_servers, require_server

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def gguf():
    return require_server()


def episodes(run_dir):
    return [json.loads(l) for l in (run_dir / "episodes.jsonl").read_text().splitlines()]


def test_embedded_model_runs_wiki_and_travel_episodes(tmp_path, gguf):
    before = llama_servers()
    res = topoeval.run_protocol("wiki_to_travel", ["smollm2-135m"], tmp_path / "r", tasks=2, shots=[0],
                                max_turns=3, max_tokens=48)
    eps = episodes(tmp_path / "r")
    assert len(eps) == 4 and res.errors == 0, [e["errors"] for e in eps]
    assert all(e["usage"]["completion_tokens"] > 0 for e in eps)
    # grammar-constrained calls: the tool is always a real one, and arguments that ended within the
    # turn's token budget parse and follow the tool's schema (only a call cut off by the budget is invalid)
    calls = [c for e in eps for c in e["calls"]]
    assert calls, "the model made no tool call at all"
    assert not [c for c in calls if "unknown tool" in (c["error"] or "")]
    for c in calls:
        if c["status"] == "invalid":
            assert "not valid JSON" in c["error"], c["error"]
    assert any(c["status"] != "invalid" for c in calls)
    # run.json says what decoding ran on: the build, its batching, this CPU
    fp = json.loads((res.run_dir / "run.json").read_text())["inference"]["smollm2-135m"]
    assert fp["backend"] == "llama-server" and fp["batching"]["slots"] >= 1
    assert "-DGGML_NATIVE=OFF" in fp["build"].get("cmake_flags", ["-DGGML_NATIVE=OFF"]) and fp["cpu"]["machine"]
    assert llama_servers() == before  # the server never outlives the run


def _wiki_turn():
    from topoeval.protocol.discovery import SuiteRegistry

    wiki = SuiteRegistry().get("wiki")
    params = wiki.parse_params({})
    [task] = wiki.tasks(params, "test", 11, 1)
    messages = [{"role": "system", "content": wiki.system_prompt(params)}, {"role": "user", "content": task.prompt}]
    return messages, [t.openai() for t in wiki.tools_for(params)]


def test_a_turn_can_end_after_a_call(gguf):
    """The end of a turn is the special token <|im_end|>: the grammar after a call must let it be
    sampled. When it could not, every turn ran on, call after call, to its token budget; the
    wiki-trained adapter (which learned one call per turn) made three open_page calls here."""
    from topoeval.core.policy import SamplingParams
    from topoeval.models.adapters import adapter_files
    from topoeval.policies.registry import make_policy

    if not adapter_files("smollm2-135m-wiki")[0].is_file():
        pytest.skip("adapters/smollm2-135m-wiki.gguf is not there")
    messages, tools = _wiki_turn()

    async def turn():
        policy = make_policy("smollm2-135m-wiki")
        try:
            return await policy.complete(messages, tools, SamplingParams(temperature=0.0, max_tokens=48))
        finally:
            await policy.aclose()

    reply = asyncio.run(turn())
    assert len(reply.tool_calls) == 1, reply
    assert reply.usage.completion_tokens < 48


def test_the_travel_adapter_writes_its_line_before_the_hold(tmp_path, gguf):
    """smollm2-135m-travel (trained with --rationale) runs with text before calls: on a travel
    task its hold turn is a line naming a flight, then the hold_seat call, in one turn — the layout its
    training record names, which the base and the other adapters never get."""
    from topoeval.models.adapters import adapter_files

    if not adapter_files("smollm2-135m-travel")[0].is_file():
        pytest.skip("adapters/smollm2-135m-travel.gguf is not there")
    res = topoeval.run_protocol("transfer_matrix", ["smollm2-135m-travel"], tmp_path / "r", tasks=1,
                                shots=[0], topologies=["travel", "wiki"], max_turns=3, max_tokens=64)
    [episode] = [e for e in episodes(res.run_dir) if e["topology"] == "travel"]
    turns = [m for m in episode["messages"] if m["role"] == "assistant"]
    hold = next(m for m in turns if any(c["function"]["name"] == "hold_seat" for c in m.get("tool_calls") or []))
    assert hold["content"].startswith("Cheapest best fit: "), turns
    assert all(not m.get("content") for m in turns if m is not hold and m.get("tool_calls")), turns


def test_base_and_adapters_share_one_server_and_differ(gguf):
    """One loaded copy of the base serves it and both adapters (per-request LoRA), and an adapter's
    request really applies it: the base and each adapter give the same prompt other next-token
    probabilities."""
    from topoeval.core.policy import SamplingParams
    from topoeval.models.adapters import adapter_files
    from topoeval.policies.registry import make_policy

    names = ["smollm2-135m", "smollm2-135m-wiki", "smollm2-135m-travel"]
    if not all(adapter_files(n)[0].is_file() for n in names[1:]):
        pytest.skip("the shipped adapters are not there")
    messages, tools = _wiki_turn()
    before = llama_servers()

    async def turns():
        policies = [make_policy(n) for n in names]
        try:
            replies = await asyncio.gather(*(p.complete(messages, tools, SamplingParams(max_tokens=32)) for p in policies))
            server = policies[0].shared.server
            probe = {"prompt": "<|im_start|>user\nName a city.<|im_end|>\n<|im_start|>assistant\n", "n_predict": 1,
                     "n_probs": 5, "temperature": 0.0}
            probs = [json.dumps(server.post_sync("/completion", {**probe, "lora": p.shared.lora_ref(p.lora_path)})
                                ["completion_probabilities"]) for p in policies]
            return replies, probs, llama_servers() - before
        finally:
            for p in policies:
                await p.aclose()

    replies, probs, running = asyncio.run(turns())
    assert len(running) == 1, running
    assert all(r.tool_calls or r.content for r in replies)
    # each adapter changes the next-token distribution of the same prompt on the same server
    assert len(set(probs)) == 3, probs
    assert llama_servers() == before


def test_the_base_after_an_adapter_is_the_base(gguf):
    """One slot, the same prompt: base, then the wiki adapter, then the base again. The slot's prompt
    cache from the adapter's request must not be reused for the base's (llama-server keeps a slot's
    cache when a request's LoRA list is empty): the base's second answer is its first."""
    from topoeval.models.adapters import adapter_path
    from topoeval.models.options import ModelOptions
    from topoeval.policies.registry import make_policy

    try:
        adapter_path("smollm2-135m-wiki")
    except Exception as exc:
        pytest.skip(str(exc))
    probe = {"prompt": "<|im_start|>user\nName a city in France and say why.<|im_end|>\n<|im_start|>assistant\n",
             "n_predict": 1, "n_probs": 5, "temperature": 0.0, "cache_prompt": True}

    async def probes():
        base, wiki = (make_policy(n, ModelOptions(local_slots=1)) for n in ("smollm2-135m", "smollm2-135m-wiki"))
        try:
            server = await base.shared.ensure(None)
            ask = lambda p: server.post_sync("/completion", {**probe, "lora": p.shared.lora_ref(p.lora_path)})
            return [json.dumps(ask(p)["completion_probabilities"]) for p in (base, wiki, base)]
        finally:
            await base.aclose()
            await wiki.aclose()

    first, adapted, again = asyncio.run(probes())
    assert adapted != first
    assert again == first
