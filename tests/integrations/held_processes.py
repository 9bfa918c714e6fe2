"""Worlds that hold a server process, for the adapters' tests that no process outlives its episode.

- :func:`mcp_notes_protocol` writes a protocol over the mcp suite's notes server
  (tests/fixtures/mcp/notes_server.py) served over stdio: a real MCP server process per world.
  It needs the MCP SDK 2.x (the main virtualenv, .venv-verifiers).
- :func:`process_suite_protocol` writes a suite folder and a protocol whose world starts a plain
  child process and stops it in ``World.close()`` — for .venv-openenv, whose ``mcp`` 1.x cannot run
  the mcp suite (OpenEnv pins it; see the Makefile).

:func:`processes_with` lists live processes whose command line mentions a marker (a scratch folder
or a test's own folder)."""

from __future__ import annotations

import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp"


def processes_with(text: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                status = (entry / "status").read_text()
            except OSError:
                continue
            if text in cmdline and "State:\tZ" not in status:
                out.append(int(entry.name))
    return out


def spy_on_worlds(monkeypatch, world_cls: type) -> tuple[list[int], list[int]]:
    """(ids of the worlds of ``world_cls`` made, ids of those closed by a call to ``close``) — a
    world dropped unclosed is only released by the garbage collector, which ``close`` does not see."""
    made: list[int] = []
    closed: list[int] = []
    init, close = world_cls.__init__, world_cls.close

    def spied_init(self, *args, **kwargs):
        made.append(id(self))
        init(self, *args, **kwargs)

    def spied_close(self):
        closed.append(id(self))
        close(self)

    monkeypatch.setattr(world_cls, "__init__", spied_init)
    monkeypatch.setattr(world_cls, "close", spied_close)
    return made, closed


def mcp_notes_protocol(folder: Path, n: int = 2) -> Path:
    """A protocol whose topology ``notes`` serves the notes server over stdio (one process per world)."""
    params = {"server": {"command": ["{python}", str(FIXTURES / "notes_server.py"), "--workdir", "{workdir}"],
                         "timeout_s": 20, "startup_timeout_s": 60},
              "tasks": str(FIXTURES / "notes_tasks.yaml"), "overlay": str(FIXTURES / "notes_overlay.yaml")}
    path = folder / "notes_close.yaml"
    path.write_text(json.dumps({
        "name": "notes_close", "train": {"name": "notes", "suite": "mcp", "params": params},
        "test": [{"name": "notes_test", "role": "id", "suite": "mcp", "params": params}],
        "tasks": {"test": {"n": n}}, "baselines": {"shots": [0]}}))
    return path


PROCESS_SUITE = '''
name: procs
description: Each world holds a child process until it is closed.
world: world.py:ProcSuite
tools:
  - name: lookup
    description: The value.
    parameters: {type: object, properties: {}, additionalProperties: false}
    effect: read
    idempotent: true
    parallel_safe: true
topology: {state: stateless, reversibility: all_reversible, user: none, ordering: flat, dependency: independent,
           schema_name: procs-v1, answer_channel: text}
'''

PROCESS_WORLD = '''
import subprocess, sys, uuid
from pydantic import BaseModel, ConfigDict
from topoeval.core.answers import exact_match
from topoeval.core.messages import calls, final
from topoeval.core.suite import GoldCall, Suite, Task, World, task_id, task_seed


class ProcParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    marker: str = "procs"


class ProcSuite(Suite):
    Params = ProcParams

    def generate(self, params, split, seed, index):
        s = task_seed(self.name, params, split, seed, index)
        return Task(id=task_id(self.name, split, index, s), suite=self.name, split=split, index=index, family="p",
                    prompt=f"What is the value {index}?", answer="42", gold=[GoldCall(id="g", tool="lookup", arguments={})],
                    data={"marker": params.marker})

    def make_world(self, task):
        return ProcWorld(task.data["marker"])

    def score(self, task, final_answer, world):
        return {"success": exact_match(final_answer, [task.answer])}

    def oracle(self, task, messages, variant="oracle"):
        return final("42") if messages and messages[-1].get("role") == "tool" else calls(("lookup", {}))


class ProcWorld(World):
    def __init__(self, marker):
        self.events = []
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(600)",
                                      f"{marker}/{uuid.uuid4().hex}"], stdout=subprocess.PIPE)
        self.proc.stdout.readline()  # started: its command line is the marker's from here on

    def call(self, name, arguments):
        return "42"

    def snapshot(self):
        return {}

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc.stdout.close()
'''


def process_suite_protocol(folder: Path, marker: str, n: int = 2) -> tuple[Path, Path]:
    """(protocol path, suites folder) of the ``procs`` suite; its worlds' processes carry ``marker``."""
    suite = folder / "suites" / "procs"
    suite.mkdir(parents=True)
    (suite / "suite.yaml").write_text(PROCESS_SUITE)
    (suite / "world.py").write_text(PROCESS_WORLD)
    path = folder / "procs_close.yaml"
    params = {"marker": marker}
    path.write_text(json.dumps({
        "name": "procs_close", "train": {"name": "procs", "suite": "procs", "params": params},
        "test": [{"name": "procs_test", "role": "id", "suite": "procs", "params": params}],
        "tasks": {"test": {"n": n}}, "baselines": {"shots": [0]}}))
    return path, folder / "suites"
