"""Local models: the embedded SmolLM2-135M through topoeval's llama-server against bare references.

    .venv/bin/python bench/local_models.py            (make bench-local; about 30 minutes on 2 cores)

Prints, in one run on this machine:

1. **Single stream, tokens/s.** (a) the bare server: one synchronous client sending topoeval's own
   grammar-constrained steps for the first turn of 6 wiki tasks straight to ``/v1/completions``
   (no policy, no asyncio); (b) the same turns through topoeval's policy at concurrency 1 — the
   ratio (b)/(a) is the harness's cost; (c) bare llama-cpp-python in-process on the same portable
   libraries, free generation of the same prompts, as the library's own speed.
2. **Episodes/s** of the ``make eval`` quick look (``wiki_to_travel``, the base and the wiki adapter,
   5 tasks per topology, 0 shots, 6 turns x 64 tokens) at concurrency = slots per model 1, 2, 4, 8, and
   of the same cells through the previous in-process path (``--baseline-ref``, default the last
   commit with it, run from a git worktree on the same portable libraries), with the ratio to it;
   then the same cells at 2 shots (the collapse's longest prompts: two demonstrations), where the
   saved prefix states matter most, at 1 slot with and without them (``--fewshot-shots``).
3. **Determinism under batching.** How many of the quick look's episodes at each slot count are
   identical (messages and calls) to those of a first run at 1 slot (1 slot runs twice: run to run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: the last commit with the in-process llama-cpp-python path (LlamaCppPolicy)
BASELINE_REF = "592a280"
QUICK = dict(tasks=5, shots=[0], max_turns=6, max_tokens=64)
QUICK_MODELS = ["smollm2-135m", "smollm2-135m-wiki"]


def first_turns(n: int = 6):
    from topoeval.protocol.discovery import SuiteRegistry

    wiki = SuiteRegistry().get("wiki")
    params = wiki.parse_params({})
    tasks = wiki.tasks(params, "dev", 0, n)
    tools = [t.openai() for t in wiki.tools_for(params)]
    convs = [[{"role": "system", "content": wiki.system_prompt(params)}, {"role": "user", "content": t.prompt}] for t in tasks]
    return tasks, convs, tools, wiki


def bare_server_steps(convs, tools, max_tokens: int) -> float:
    """Tokens/s of the same turns, each step sent by a plain synchronous client to a fresh server."""
    from topoeval.models.embedded import embedded_gguf
    from topoeval.models.llama_server import LlamaServer
    from topoeval.models.llamacpp_build import server_binary
    from topoeval.models.llamacpp_format import for_chatml_function_calling
    from topoeval.models.llamacpp_tools import END, complete_with_tools

    server = LlamaServer(server_binary(), embedded_gguf(), slots=1)
    try:
        async def gen(text, n, grammar=None, json_schema=None, stop=(END,)):
            body = {"prompt": text, "max_tokens": n, "stop": list(stop), "temperature": 0.0, "cache_prompt": True}
            if grammar is not None:
                body["grammar"] = grammar
            if json_schema is not None:
                body["json_schema"] = json_schema
            req = urllib.request.Request(server.api_base + "/completions", data=json.dumps(body).encode(),
                                         headers=server.headers)
            with urllib.request.urlopen(req) as r:  # blocking on purpose: no event loop work in between
                d = json.loads(r.read())
            return d["choices"][0]["text"], d["usage"]["prompt_tokens"], d["usage"]["completion_tokens"]

        def turn(msgs, n):
            return asyncio.run(complete_with_tools(gen, for_chatml_function_calling(msgs), tools, n))

        turn(convs[0], 4)  # warm up
        t0, toks = time.perf_counter(), 0
        for msgs in convs:
            toks += turn(msgs, max_tokens)["usage"]["completion_tokens"]
        return toks / (time.perf_counter() - t0)
    finally:
        server.stop()


def policy_steps(tasks, convs, tools, wiki, max_tokens: int) -> float:
    from topoeval.core.policy import EpisodeContext, SamplingParams
    from topoeval.models.options import ModelOptions
    from topoeval.policies.registry import make_policy

    async def run() -> float:
        policy = make_policy("smollm2-135m", ModelOptions(local_slots=1))
        sampling = SamplingParams(max_tokens=max_tokens, temperature=0.0)
        try:
            ctx = EpisodeContext(task=tasks[0], suite=wiki, sample=0, shots=0)
            await policy.act(convs[0], tools, sampling.model_copy(update={"max_tokens": 4}), ctx)  # warm up
            t0, total = time.perf_counter(), 0
            for task, msgs in zip(tasks, convs):
                reply = await policy.act(msgs, tools, sampling, EpisodeContext(task=task, suite=wiki, sample=0, shots=0))
                total += reply.usage.completion_tokens
            return total / (time.perf_counter() - t0)
        finally:
            await policy.aclose()

    return asyncio.run(run())


def bare_llama_cpp_python(convs, max_tokens: int) -> float | None:
    """Free generation in-process (llama-cpp-python on the portable build's libraries)."""
    from topoeval.core.errors import UserError
    from topoeval.models.embedded import embedded_gguf
    from topoeval.models.llamacpp_build import import_llama_cpp
    from topoeval.models.llamacpp_tools import render_prompt

    try:
        llama_cpp = import_llama_cpp()
    except UserError:
        return None
    llama = llama_cpp.Llama(model_path=embedded_gguf(), n_ctx=8192, n_threads=os.cpu_count(), verbose=False)
    try:
        llama.create_completion(render_prompt(convs[0], []), max_tokens=4, temperature=0.0)
        t0, toks = time.perf_counter(), 0
        for msgs in convs:
            r = llama.create_completion(render_prompt(msgs, []), max_tokens=max_tokens, temperature=0.0)
            toks += r["usage"]["completion_tokens"]
        return toks / (time.perf_counter() - t0)
    finally:
        llama.close()


def quick_look(slots: int, out: Path, shots: int = 0, prefix_states: bool = True) -> tuple[float, dict]:
    import topoeval
    from topoeval.models.options import ModelOptions

    t0 = time.perf_counter()
    options = ModelOptions(local_slots=slots, local_prefix_states=prefix_states)
    res = topoeval.run_protocol("wiki_to_travel", QUICK_MODELS, out, cache=False, concurrency=slots,
                                model_options=options, **{**QUICK, "shots": [shots]})
    elapsed = time.perf_counter() - t0
    return res.new_episodes / elapsed, transcripts(res.run_dir)


def transcripts(run_dir: Path) -> dict:
    rows = [json.loads(l) for l in (run_dir / "episodes.jsonl").read_text().splitlines()]
    return {r["key"]: json.dumps([r["messages"], r["calls"]], sort_keys=True) for r in rows}


def old_in_process(ref: str, out: Path, shots: int = 0) -> float | None:
    """Episodes/s of the quick look through the in-process path of ``ref`` (a git worktree), on the
    portable libraries (``LLAMA_CPP_LIB_PATH``), one model at a time as that path ran them."""
    from topoeval.models.llamacpp_build import build_dir

    tree = Path(tempfile.mkdtemp(prefix="topoeval-old-"))
    if subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref], capture_output=True).returncode:
        return None
    try:
        code = ("import time, topoeval; t0 = time.perf_counter(); "
                f"r = topoeval.run_protocol('wiki_to_travel', {QUICK_MODELS!r}, {str(out)!r}, cache=False, tasks=5, "
                f"shots=[{shots}], max_turns=6, max_tokens=64); print(r.new_episodes / (time.perf_counter() - t0))")
        env = {**os.environ, "PYTHONPATH": str(tree), "LLAMA_CPP_LIB_PATH": str(build_dir()),
               "TOPOEVAL_ADAPTERS": str(ROOT / "adapters")}
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tree)
        if proc.returncode:
            print(f"(the in-process path of {ref} failed: {proc.stderr.strip().splitlines()[-1:]})")
            return None
        return float(proc.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, nargs="+", default=[1, 1, 2, 4, 8], help="slots per model, in order (the first is the reference)")
    ap.add_argument("--baseline-ref", default=BASELINE_REF, help="git ref of the in-process path ('' to skip)")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--fewshot-shots", type=int, default=2, help="the few-shot cells' shots (0 to skip them)")
    args = ap.parse_args()

    tasks, convs, tools, wiki = first_turns()
    bare = bare_server_steps(convs, tools, args.max_tokens)
    ours = policy_steps(tasks, convs, tools, wiki, args.max_tokens)
    lib = bare_llama_cpp_python(convs, args.max_tokens)
    print(f"{os.cpu_count()} cores; single stream, first turns of 6 wiki tasks, <= {args.max_tokens} tokens each")
    print(f"  bare llama-server, topoeval's grammar steps, sync client : {bare:6.1f} tok/s (reference)")
    print(f"  topoeval policy, concurrency 1                          : {ours:6.1f} tok/s  x{ours / bare:.2f}")
    if lib is not None:
        print(f"  bare llama-cpp-python in-process, free generation       : {lib:6.1f} tok/s  x{lib / bare:.2f}")

    with tempfile.TemporaryDirectory() as tmp:
        old = old_in_process(args.baseline_ref, Path(tmp) / "old") if args.baseline_ref else None
        print(f"quick look (wiki_to_travel, {', '.join(QUICK_MODELS)}, 5 tasks, 0 shots, 6 turns x 64 tokens)")
        if old is not None:
            print(f"  in-process path ({args.baseline_ref})  : {old:.3f} episodes/s (reference)")
        first = None
        for i, slots in enumerate(args.slots):
            eps, seen = quick_look(slots, Path(tmp) / f"run{i}-s{slots}")  # a folder each: nothing resumed
            first = first or seen
            same = sum(seen.get(k) == v for k, v in first.items())
            vs = f"  x{eps / old:.2f}" if old else ""
            print(f"  llama-server, {slots} slot(s) per model : {eps:.3f} episodes/s{vs}   "
                  f"identical to the first run: {same}/{len(first)} episodes")
        if args.fewshot_shots:
            fewshot(args, Path(tmp))


def fewshot(args: argparse.Namespace, tmp: Path) -> None:
    """The quick look's cells at ``--fewshot-shots`` shots: the in-process path, then 1 slot per model
    with each episode's first request from scratch and with the saved prefix states (the default)."""
    shots = args.fewshot_shots
    old = old_in_process(args.baseline_ref, tmp / "old-fewshot", shots) if args.baseline_ref else None
    print(f"the same cells at {shots} shots")
    if old is not None:
        print(f"  in-process path ({args.baseline_ref})  : {old:.3f} episodes/s (reference)")
    for label, prefix_states in (("first requests from scratch", False), ("saved prefix states", True)):
        eps, _ = quick_look(1, tmp / f"fewshot-{prefix_states}", shots, prefix_states)
        vs = f"  x{eps / old:.2f}" if old else ""
        print(f"  llama-server, 1 slot, {label:27s} : {eps:.3f} episodes/s{vs}")


if __name__ == "__main__":
    main()
