"""topoeval sweep PROTOCOL --checkpoints DIR --serve TEMPLATE: a server per checkpoint (or one for every LoRA
checkpoint) that topoeval starts, uses and stops — and never leaves behind (normal end, SIGTERM, kill -9).

The server is tests/serve_standin.py, a real OpenAI-compatible server process whose "weights" are a
reference policy named in each checkpoint folder's variant.txt, so the curve is known."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

STANDIN = Path(__file__).resolve().parents[1] / "serve_standin.py"


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


def _pids(pid_dir: Path) -> list[int]:
    return [json.loads(p.read_text())["pid"] for p in sorted(pid_dir.glob("*.pid"))] if pid_dir.is_dir() else []


def _checkpoints(root: Path, lora: bool) -> Path:
    """checkpoint-2 (quits early), checkpoint-4 (the oracle), global_step_6 (does nothing): a curve that
    peaks early at step 4. Full weights (config.json + safetensors) or PEFT LoRA files (contents unread)."""
    runs = root / "run"
    for folder, variant in (("checkpoint-2", "oracle-quit-early"), ("checkpoint-4", "oracle"),
                            ("global_step_6", "noop")):
        where = runs / folder
        if folder.startswith("global_step") and not lora:
            where = where / "actor" / "huggingface"
        elif folder.startswith("global_step"):
            where = where / "actor" / "lora_adapter"
        where.mkdir(parents=True)
        if lora:
            (where / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen3-0.6B"}))
            (where / "adapter_model.safetensors").write_bytes(folder.encode())
        else:
            (where / "config.json").write_text("{}")
            (where / "model.safetensors").write_bytes(folder.encode())
        (where / "variant.txt").write_text(variant)
    return runs


def _sweep(topoeval_cmd, runs: Path, out: Path, template: str, *extra: str, **kw):
    cmd = [*topoeval_cmd, "sweep", "wiki_to_travel", "--checkpoints", str(runs), "--serve", template, "--tasks", "2",
           "--out", str(out), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def _template(pid_dir: Path, *extra: str) -> str:
    return f"{sys.executable} {STANDIN} --port {{port}} --pid-dir {pid_dir} " + " ".join(extra)


#: Runs the stand-in as its child and notes, in the file it is given, when the server started and when it
#: was told to stop (SIGTERM: topoeval's stop reaches the whole process group), so that a test can put
#: the servers' lives in order against each other and against the sweep's end.
_EVENTS = """
import json, signal, subprocess, sys, time

def note(event):
    with open(sys.argv[1], "a") as fh:
        fh.write(json.dumps({"event": event, "t": time.time()}) + "\\n")

note("start")
child = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGTERM, lambda *_: note("stop"))
sys.exit(child.wait())
"""


def _noting(tmp_path: Path, template: str) -> tuple[str, Path]:
    """``template`` run under the event-noting wrapper, and the file of its notes."""
    wrapper, events = tmp_path / "note_events.py", tmp_path / "events.jsonl"
    wrapper.write_text(_EVENTS)
    return f"{sys.executable} {wrapper} {events} {template}", events


def _lives(events: Path) -> list[tuple[float, float]]:
    """Each server's (started, told to stop) times, in the order they started."""
    notes = [json.loads(line) for line in events.read_text().splitlines()]
    starts, stops = [n["t"] for n in notes if n["event"] == "start"], [n["t"] for n in notes if n["event"] == "stop"]
    assert len(starts) == len(stops), notes  # every server was stopped by topoeval (not only killed at its exit)
    return list(zip(starts, sorted(stops), strict=True))


def _serve_logs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("topoeval-serve-*.log"))


def test_a_server_per_checkpoint_is_started_used_and_stopped(tmp_path, topoeval_cmd):
    runs, pid_dir, out = _checkpoints(tmp_path, lora=False), tmp_path / "pids", tmp_path / "sweep"
    template, events = _noting(tmp_path, _template(pid_dir, "--path {path} --name {name}"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _sweep(topoeval_cmd, runs, out, template, env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    pids = _pids(pid_dir)
    assert len(pids) == 3 and not [p for p in pids if _alive(p)]  # one server per checkpoint, none left
    lives = _lives(events)
    assert len(lives) == 3
    for (_, stopped), (started, _) in zip(lives, lives[1:], strict=False):
        assert stopped < started  # each checkpoint's server is stopped before the next one starts
    assert lives[-1][1] < (out / "summary.json").stat().st_mtime  # the last one before the sweep ends
    assert _serve_logs(tmp) == [] and "log is kept" not in proc.stderr  # a clean run leaves no server log
    sweep = json.loads((out / "summary.json").read_text())
    assert [(p["step"], p["model"]) for p in sweep["points"]] == [(2, "direct:step-2"), (4, "direct:step-4"),
                                                                  (6, "direct:step-6")]
    assert sweep["points"][2]["path"].endswith("global_step_6/actor/huggingface")
    wiki = sweep["curves"][0]
    assert [p["model"] for p in wiki["success"]] == ["step-2", "step-4", "step-6"]
    assert [p["mean"] for p in wiki["success"]] == [0.0, 1.0, 0.0]
    shape = next(s for s in sweep["shapes"] if s["topology"] == "wiki" and s["metric"] == "success")
    assert shape["peaked_early"] and shape["peak_step"] == 4
    assert "wiki (id) success peaked early at step 4 (1.00) and ended at 0.00 at step 6" in proc.stdout
    # the same command again: every episode is there, no server is started
    again = _sweep(topoeval_cmd, runs, out, _template(pid_dir, "--path {path} --name {name}"))
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(_pids(pid_dir)) == 3


def test_one_server_carries_every_lora_checkpoint(tmp_path, topoeval_cmd):
    runs, pid_dir, out = _checkpoints(tmp_path, lora=True), tmp_path / "pids", tmp_path / "sweep"
    template, events = _noting(tmp_path, _template(pid_dir, "--lora-modules {lora_modules}"))
    proc = _sweep(topoeval_cmd, runs, out, template, "--every", "4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    pids = _pids(pid_dir)
    assert len(pids) == 1 and not _alive(pids[0])
    [(_, stopped)] = _lives(events)
    assert stopped < (out / "summary.json").stat().st_mtime  # stopped when its points were run, not at exit
    sweep = json.loads((out / "summary.json").read_text())
    assert [p["step"] for p in sweep["points"]] == [4, 6]  # --every 4 keeps 4 and the last
    assert [p["mean"] for p in sweep["curves"][1]["success"]] == [1.0, 0.0]


def test_a_server_that_cannot_start_is_one_line(tmp_path, topoeval_cmd):
    runs, pid_dir = _checkpoints(tmp_path, lora=False), tmp_path / "pids"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _sweep(topoeval_cmd, runs, tmp_path / "sweep", _template(pid_dir, "--path {path} --fail"),
                  env={**os.environ, "TMPDIR": str(tmp)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "exited with code 3 before answering" in proc.stderr and "refusing to start" in proc.stderr
    [log] = _serve_logs(tmp)  # kept, and named in the error, for the user to read
    assert f"log {log})" in proc.stderr and "refusing to start" in log.read_text()
    proc = _sweep(topoeval_cmd, runs, tmp_path / "sweep", "x --port {port} {weights}")
    assert proc.returncode == 2 and "unknown field {weights}" in proc.stderr
    proc = _sweep(topoeval_cmd, runs, tmp_path / "sweep", "x --port {port} {path} --flag 'unclosed")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot split it as a command line: No closing quotation" in proc.stderr


def test_full_weights_without_a_server_ask_for_one(tmp_path, topoeval_cmd):
    runs = _checkpoints(tmp_path, lora=False)
    proc = subprocess.run([*topoeval_cmd, "sweep", "wiki_to_travel", "--checkpoints", str(runs)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "full weights; evaluate them on a server: --serve" in proc.stderr


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "kill -9"])
def test_no_server_outlives_a_stopped_sweep(tmp_path, topoeval_cmd, how):
    """The sweep is stopped while its first server answers (slowly); its server goes with it: stopped by
    topoeval on SIGTERM, killed by the kernel (PR_SET_PDEATHSIG) on kill -9."""
    runs, pid_dir = _checkpoints(tmp_path, lora=False), tmp_path / "pids"
    template = _template(pid_dir, "--path {path} --name {name} --delay 0.5")
    # output to files, not pipes nobody reads while it runs: a full pipe would block the sweep's exit
    err_path = tmp_path / "stderr.txt"
    with open(tmp_path / "stdout.txt", "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen([*topoeval_cmd, "sweep", "wiki_to_travel", "--checkpoints", str(runs), "--serve",
                                 template, "--tasks", "2", "--out", str(tmp_path / "sweep")],
                                stdout=out, stderr=err, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _pids(pid_dir) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        pids = _pids(pid_dir)
        assert pids and proc.poll() is None, err_path.read_text() if proc.poll() is not None else "no server started"
        time.sleep(1.5)  # it answers episodes now
        assert proc.poll() is None and all(_alive(p) for p in pids)
        os.kill(proc.pid, how)
        proc.wait(90)
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if _alive(p)]
        if how == signal.SIGTERM:
            assert "Traceback" not in err_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in _pids(pid_dir):
            if _alive(p):
                os.kill(p, signal.SIGKILL)


@pytest.mark.parametrize("placeholder", ['"{path}"', "'{path}'", '"--path={path}"'])
def test_a_quoted_placeholder_is_refused_with_a_hint(tmp_path, topoeval_cmd, placeholder):
    """Issue 56: `--serve '... --path "{path}"'` handed the server a path with literal quotes in it (and, for a
    folder with an apostrophe, was a traceback): the fields are passed as one argument each already."""
    runs, pid_dir = _checkpoints(tmp_path / "bob's", lora=False), tmp_path / "pids"
    path = placeholder if placeholder.startswith('"--') else f"--path {placeholder}"
    proc = _sweep(topoeval_cmd, runs, tmp_path / "sweep", _template(pid_dir, path, "--name {name}"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip().count("\n") == 0
    assert "error: --serve: {path} is inside quotes; write {path} bare" in proc.stderr
    assert _pids(pid_dir) == []  # refused before any server started


def test_a_folder_with_an_apostrophe_reaches_the_server_as_it_is(tmp_path, topoeval_cmd):
    runs, pid_dir, out = _checkpoints(tmp_path / "bob's run", lora=False), tmp_path / "pids", tmp_path / "sweep"
    proc = _sweep(topoeval_cmd, runs, out, _template(pid_dir, "--path {path} --name {name}"), "--every", "4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = json.loads((out / "summary.json").read_text())
    assert "bob's run" in sweep["points"][0]["path"]
    # the servers read each folder's variant.txt: 4 is the oracle, 6 does nothing (a wrong path reads as oracle)
    assert [p["mean"] for p in sweep["curves"][0]["success"]] == [1.0, 0.0]


def test_a_server_that_exits_during_its_block_keeps_its_log_and_says_where(tmp_path, capsys):
    from topoeval.models.managed_server import ManagedServer

    where = tmp_path / "checkpoint-1"
    where.mkdir()
    server = ManagedServer(f"{sys.executable} {STANDIN} --port {{port}} --path {{path}}", path=where)
    with server:
        server.proc.kill()  # the server dies under the run
        server.proc.wait(10)
    log = Path(server.log.name)
    assert log.is_file() and f"log is kept: {log}" in capsys.readouterr().err
    log.unlink()
    with ManagedServer(f"{sys.executable} {STANDIN} --port {{port}} --path {{path}}", path=where) as server:
        pass
    assert not Path(server.log.name).exists() and "log is kept" not in capsys.readouterr().err
