"""The embedded SmolLM2-135M GGUF through llama.cpp: in-process, and behind a llama.cpp server via litellm.

Marked ``local_model`` (deselect with -m 'not local_model'); ``make test`` runs them.
"""

import json
from pathlib import Path

import pytest

import topoeval

pytestmark = pytest.mark.local_model
llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is an optional extra (topoeval[local])")


@pytest.fixture(scope="module")
def gguf():
    from topoeval.models.embedded import embedded_gguf

    try:
        return embedded_gguf()
    except Exception as exc:  # the wheel is installed by make install / make test
        pytest.skip(f"embedded model not installed: {exc}")


def episodes(run_dir):
    return [json.loads(l) for l in (run_dir / "episodes.jsonl").read_text().splitlines()]


def test_in_process_gguf_runs_wiki_and_travel_episodes(tmp_path, gguf):
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


def test_a_turn_can_end_after_a_call(gguf):
    """The end of a turn is the special token <|im_end|>: the grammar after a call must let it be
    sampled. When it could not, every turn ran on, call after call, to its token budget; the
    wiki-trained adapter (which learned one call per turn) made three open_page calls here."""
    from topoeval.models.adapters import adapter_files
    from topoeval.models.llamacpp_tools import complete_with_tools
    from topoeval.protocol.discovery import SuiteRegistry

    lora = adapter_files("smollm2-135m-wiki")[0]
    if not lora.is_file():
        pytest.skip("adapters/smollm2-135m-wiki.gguf is not there")
    wiki = SuiteRegistry().get("wiki")
    params = wiki.parse_params({})
    [task] = wiki.tasks(params, "test", 11, 1)
    llama = llama_cpp.Llama(model_path=gguf, lora_path=str(lora), n_ctx=4096, verbose=False)
    try:
        reply = complete_with_tools(llama, [{"role": "system", "content": wiki.system_prompt(params)},
                                            {"role": "user", "content": task.prompt}],
                                    [t.openai() for t in wiki.tools_for(params)], max_tokens=48)
    finally:
        llama.close()
    message = reply["choices"][0]["message"]
    assert len(message["tool_calls"]) == 1, message
    assert reply["usage"]["completion_tokens"] < 48


def _servers() -> set[int]:
    """Pids of running llama.cpp servers (read from /proc)."""
    out = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"topoeval.models.llamacpp_serve" in cmd:
            out.add(int(proc.name))
    return out


def test_llamacpp_server_through_litellm_and_stopped_after(tmp_path, gguf):
    before = _servers()
    res = topoeval.run_protocol("wiki_hops", ["smollm2-135m@server"], tmp_path / "s", tasks=1, shots=[0],
                                max_turns=3, max_tokens=48)
    eps = episodes(tmp_path / "s")
    assert len(eps) == 3 and res.errors == 0, [e["errors"] for e in eps]
    assert any(e["calls"] for e in eps)
    assert _servers() == before  # the server never outlives the run


@pytest.mark.parametrize("sig", ["SIGINT", "SIGKILL"])
def test_server_does_not_outlive_an_interrupted_or_killed_run(tmp_path, gguf, topoeval_cmd, sig):
    import signal
    import subprocess
    import time

    before = _servers()
    proc = subprocess.Popen([*topoeval_cmd, "run", "wiki_hops", "-m", "smollm2-135m@server", "--tasks", "2",
                             "--out", str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (_servers() - before):
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(getattr(signal, sig))
    proc.communicate(timeout=60)
    deadline = time.time() + 30
    while _servers() - before and time.time() < deadline:
        time.sleep(0.2)
    assert _servers() == before


def test_models_loaded_in_parallel_leave_stdout_where_it_was(gguf):
    """Llama(verbose=False) silences fds 1 and 2 while it loads; two loads at once must not leave the
    process's stdout on /dev/null (a two-model run used to print no table at the end)."""
    import os
    import threading

    from topoeval.models.llamacpp import LlamaCppPolicy
    from topoeval.models.options import ModelOptions

    before = os.fstat(1)
    policies = [LlamaCppPolicy(gguf, ModelOptions(n_ctx=512)) for _ in range(3)]
    threads = [threading.Thread(target=p._load) for p in policies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = os.fstat(1)
    for p in policies:
        p._llama.close()
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
