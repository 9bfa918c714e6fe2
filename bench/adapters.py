"""Tokens/s of the shipped adapter models against the embedded base they were trained from.

    .venv/bin/python bench/adapters.py            # smollm2-135m, -wiki, -travel, -wiki-grpo; 6 prompts per topology

Every model answers the same first turns — wiki and travel test tasks, each with its topology's system
prompt and tools — through topoeval's backend (``make_policy``: grammar-constrained tool calls in
llama.cpp, the LoRA applied at run time), at temperature 0 with at most 48 new tokens. Reported per
model: seconds per turn, generated tokens per second, prompt tokens per second (both over the
turns' whole wall time: a turn is several grammar-constrained generations over the same prompt),
and the ratio of each to the base (the reference, 1.00). Models whose adapter is not in adapters/ are skipped with the command that
makes them. Run it on a quiet machine: it is CPU-bound.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODELS = ("smollm2-135m", "smollm2-135m-wiki", "smollm2-135m-travel", "smollm2-135m-wiki-grpo")


def prompts(n: int) -> list[tuple]:
    """(task, suite, messages, tools) for the first n test tasks of wiki and of travel."""
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.protocol.loader import load_protocol
    from topoeval.protocol.topology import resolve

    registry = SuiteRegistry()
    protocol = load_protocol("wiki_to_travel", registry)
    out = []
    for spec in protocol.test:
        topo = resolve(spec, registry)
        for task in topo.tasks("test", protocol.tasks.test.seed, n):
            messages = [{"role": "system", "content": topo.system_prompt()}, {"role": "user", "content": task.prompt}]
            out.append((task, topo.suite, messages, [t.openai() for t in topo.suite.tools_for(topo.params)]))
    return out


async def measure(model: str, items: list[tuple], max_tokens: int) -> dict:
    from topoeval.core.policy import EpisodeContext, SamplingParams
    from topoeval.policies.registry import make_policy

    policy = make_policy(model)
    sampling = SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=0)
    task, suite, messages, tools = items[0]
    await policy.act(messages, tools, sampling.model_copy(update={"max_tokens": 4}),
                     EpisodeContext(task=task, suite=suite, sample=0, shots=0))  # load and warm up
    generated = prompt = 0
    t0 = time.perf_counter()
    for task, suite, messages, tools in items:
        reply = await policy.act(messages, tools, sampling, EpisodeContext(task=task, suite=suite, sample=0, shots=0))
        generated += reply.usage.completion_tokens
        prompt += reply.usage.prompt_tokens
    elapsed = time.perf_counter() - t0
    await policy.aclose()
    return {"model": model, "generated": generated, "tok_s": generated / elapsed, "prompt_tok_s": prompt / elapsed,
            "seconds": elapsed, "s_per_turn": elapsed / len(items)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=6, help="test tasks per topology")
    ap.add_argument("--max-tokens", type=int, default=48)
    args = ap.parse_args()

    from topoeval.core.errors import UserError

    items = prompts(args.prompts)
    rows = []
    for model in MODELS:
        try:
            rows.append(asyncio.run(measure(model, items, args.max_tokens)))
        except UserError as exc:
            print(f"{model}: skipped ({exc})")
    base = rows[0]
    print(f"{len(items)} first turns (wiki and travel), at most {args.max_tokens} new tokens, temperature 0")
    print(f"{'model':22s} {'s/turn':>7s} {'generated':>9s} {'tok/s':>7s} {'vs base':>8s} {'prompt tok/s':>13s} {'vs base':>8s}")
    for r in rows:
        print(f"{r['model']:22s} {r['s_per_turn']:7.2f} {r['generated']:9d} {r['tok_s']:7.1f} {r['tok_s'] / base['tok_s']:8.2f} "
              f"{r['prompt_tok_s']:13.1f} {r['prompt_tok_s'] / base['prompt_tok_s']:8.2f}")


if __name__ == "__main__":
    main()
