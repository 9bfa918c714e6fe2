"""The mcp suite: annotations from a server's hints and an overlay, a fresh server and scratch
folder per episode, errors as episode errors or recorded tool errors (the server gone after), and
the shipped mcp-server-git example (oracle 1, noop 0, through `topoeval run`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mcp.types as types
import pytest

from topoeval.analysis.sensitivity import bar_violations, suite_target
from topoeval.api import sensitivity_matrix as run_matrix
from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, ToolCall, calls, final
from topoeval.core.policy import Policy, SamplingParams
from topoeval.core.suite import Effect
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.topology import topology_from
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import EpisodeState, run_episode
from topoeval.runner.run import arun_episodes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mcp"
NOTES_STDIO = {
    "server": {"command": ["{python}", str(FIXTURES / "notes_server.py"), "--workdir", "{workdir}"], "timeout_s": 3},
    "tasks": str(FIXTURES / "notes_tasks.yaml"),
    "overlay": str(FIXTURES / "notes_overlay.yaml"),
}
NOTES_INPROC = {**NOTES_STDIO, "server": {"object": "notes_server:create_server", "kwargs": {"workdir": "{workdir}"}}}


@pytest.fixture(scope="module")
def mcp_suite():
    return SuiteRegistry().get("mcp")


@pytest.fixture
def inproc(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    return NOTES_INPROC


def processes_with(text: str) -> list[int]:
    """Live processes whose command line mentions ``text`` (a scratch folder is unique to its episode)."""
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


@pytest.fixture
def own_tmp(tmp_path, monkeypatch) -> Path:
    """A temporary folder of this test's own for every scratch folder made in this process."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def scratch_folders(where: Path) -> list[Path]:
    return sorted(where.glob("topoeval-mcp-*"))


def git_index(name: str) -> int:
    """Index of a task of the shipped git example's test split, by its name."""
    from topoeval_suite_mcp.params import SUITE_DIR
    from topoeval_suite_mcp.taskfile import load_task_file

    return [t.name for t in load_task_file(SUITE_DIR / "git" / "tasks.yaml").split("test")].index(name)


def topology(params: dict):
    """The topology a protocol would resolve for these mcp params (its tools are the server's)."""
    return topology_from({"name": "t", "suite": "mcp", "params": params})


@contextlib.contextmanager
def tracking_worlds(topo):
    """Collect the worlds the topology's suite makes (to look at them after the runner is done)."""
    suite = getattr(topo.suite, "inner", topo.suite)
    worlds, make = [], suite.make_world

    def tracked(task):
        worlds.append(make(task))
        return worlds[-1]

    suite.make_world = tracked
    try:
        yield worlds
    finally:
        del suite.make_world


def episode(params: dict, index: int = 0, split: str = "test") -> EpisodeState:
    topo = topology(params)
    return EpisodeState(topo.suite, topo.suite.generate(topo.params, split, 0, index), topo.system_prompt(), [], Limits())


# -- annotations ---------------------------------------------------------------------------

def _tool(name, hints=None, meta=None, props=("repo_path", "message")):
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in props}, "required": list(props)}
    return types.Tool(name=name, description=f"{name} tool", input_schema=schema,
                      annotations=types.ToolAnnotations(**hints) if hints is not None else None, meta=meta)


def test_hints_map_to_annotations_and_the_overlay_wins(mcp_suite):
    from topoeval_suite_mcp.annotations import Overlay, tool_specs

    listing = [
        _tool("look", {"read_only_hint": True}),
        _tool("wipe", None),  # no hints: MCP's defaults, destructive
        _tool("append", {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": True}),
        _tool("send", {"destructive_hint": False}, meta={"topoeval/effect": "irreversible", "topoeval/needs_confirmation": True}),
        _tool("commit", {"destructive_hint": False}),
    ]
    overlay = Overlay.model_validate({"bind": {"repo_path": "{workdir}"}, "hide": ["look"],
                                      "tools": {"commit": {"effect": "irreversible", "parallel_safe": True, "object": "message"}}})
    specs, objects = tool_specs(listing, overlay, with_user=True, source="test")
    by = {s.name: s for s in specs}
    assert "look" not in by and "ask_user" in by and by["ask_user"].user_channel
    assert (by["wipe"].effect, by["wipe"].idempotent, by["wipe"].parallel_safe) == (Effect.irreversible, False, False)
    assert (by["append"].effect, by["append"].idempotent) == (Effect.write, True)
    assert by["send"].effect == Effect.irreversible and by["send"].needs_confirmation  # _meta beats the hints
    assert by["commit"].effect == Effect.irreversible and by["commit"].parallel_safe  # the overlay beats both
    assert objects == {"commit": "message"}
    assert "repo_path" not in by["commit"].parameters["properties"] and by["commit"].parameters["required"] == ["message"]
    read_only = tool_specs([_tool("look", {"read_only_hint": True})], Overlay(), with_user=False, source="t")[0][0]
    assert (read_only.effect, read_only.idempotent, read_only.parallel_safe) == (Effect.read, True, True)
    with pytest.raises(UserError, match="overlay names tools the server does not have: nope"):
        tool_specs(listing, Overlay.model_validate({"tools": {"nope": {"effect": "read"}}}), with_user=False, source="t")


def test_the_git_example_is_annotated_from_the_server(mcp_suite):
    tools = {t.name: t for t in mcp_suite.tools}
    assert tools["git_status"].effect == Effect.read and tools["git_status"].parallel_safe
    assert tools["git_add"].effect == Effect.write and tools["git_add"].idempotent
    assert tools["git_reset"].effect == Effect.irreversible  # the server's own destructive hint
    commit = tools["git_commit"]  # the overlay: final, and confirmed with the user
    assert commit.effect == Effect.irreversible and commit.needs_confirmation
    assert "repo_path" not in commit.parameters["properties"] and "ask_user" in tools
    topo = mcp_suite.manifest.topology
    assert (topo.state, topo.reversibility, topo.user, topo.dependency, topo.schema_name) == (
        "stateful", "some_irreversible", "hidden_slots", "mixed", "mcp-git")


def test_more_tasks_than_the_file_gives_a_split_is_one_line_not_a_shorter_list(mcp_suite):
    params = mcp_suite.parse_params({})
    size = mcp_suite.pool_size(params, "fewshot")
    assert len(mcp_suite.tasks(params, "fewshot", 0, size)) == size
    with pytest.raises(UserError, match=rf"^mcp: the fewshot split holds {size} tasks in .*tasks.yaml, {size + 1} were "
                                        "asked for — lower the task count"):
        mcp_suite.tasks(params, "fewshot", 0, size + 1)
    # the file's order is its author's: another seed draws the same tasks in the same order
    assert ([t.data["name"] for t in mcp_suite.tasks(params, "fewshot", 0, size)]
            == [t.data["name"] for t in mcp_suite.tasks(params, "fewshot", 7, size)])


def test_suites_command_shows_the_derived_tools(topoeval_cmd):
    proc = subprocess.run([*topoeval_cmd, "suites"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.lstrip("│ ").startswith("mcp "))
    assert "some_irreversible" in row and "hidden_slots" in row and "mixed" in row
    assert "git_commit[i]" in proc.stdout or "13 tools: 8 [r], 3 [w], 2 [i]" in row  # listed, or counted when many


def test_task_file_errors_name_file_and_field(mcp_suite, tmp_path):
    bad = tmp_path / "tasks.yaml"
    bad.write_text("name: x\ntasks:\n  - {name: a, instruction: hi, fixture: nowhere, answer: b}\n")
    with pytest.raises(ValueError, match="unknown fixture 'nowhere'"):
        mcp_suite.parse_params({**NOTES_STDIO, "tasks": str(bad)})
    bad.write_text("name: x\ntasks:\n  - {name: a, instruction: hi}\n")
    with pytest.raises(ValueError, match="nothing to judge it by"):
        mcp_suite.parse_params({**NOTES_STDIO, "tasks": str(bad)})
    with pytest.raises(ValueError, match="'tasks' is required"):
        mcp_suite.parse_params({"server": NOTES_STDIO["server"]})
    with pytest.raises(ValueError, match="exactly one of 'command'"):
        mcp_suite.parse_params({**NOTES_STDIO, "server": {"command": ["x"], "object": "a:b"}})


def test_validate_reports_bad_mcp_params_as_one_line(tmp_path, topoeval_cmd):
    proto = tmp_path / "p.yaml"
    proto.write_text("name: p\ntrain: {name: g, suite: mcp, params: {server: {command: [x]}}}\n"
                     "test: [{name: g, role: id, suite: mcp, params: {tasks: nowhere.yaml, server: {command: [x]}}}]\n"
                     "tasks: {test: {n: 1}}\n")
    proc = subprocess.run([*topoeval_cmd, "validate", str(proto)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "'tasks' is required" in proc.stderr and "no such file: nowhere.yaml" in proc.stderr


# -- the shipped example --------------------------------------------------------------------

@pytest.mark.slow
def test_git_example_reference_policies_in_process(mcp_suite, tmp_path, own_tmp):
    """Every test task: the oracle solves it, noop fails it; random stays near zero; all 27 tasks."""
    proto = tmp_path / "git_inproc.yaml"
    proto.write_text("name: git_inproc\ntrain: {name: git, suite: mcp}\ntest: [{name: git, role: id, suite: mcp}]\n"
                     "tasks: {test: {n: 27}, fewshot: {n: 1}}\nlimits: {max_turns: 12, max_tool_calls: 20}\n")
    result = asyncio.run(arun_episodes(str(proto), ["oracle", "noop", "random"], tmp_path / "run"))
    by: dict[str, list] = {}
    for r in result.records:
        by.setdefault(r["model"], []).append(r)
    assert len(by["oracle"]) == 27 and all(r["status"] == "done" for r in by["oracle"])
    assert [r["task_id"] for r in by["oracle"] if r["scores"]["success"] != 1.0] == []
    assert [r["task_id"] for r in by["noop"] if r["scores"]["success"] != 0.0] == []
    assert sum(r["scores"]["success"] for r in by["random"]) / 27 <= 0.1
    assert scratch_folders(own_tmp) == []  # every episode's scratch repository is gone


@pytest.mark.slow
def test_git_example_meets_the_sensitivity_bar_alone():
    matrix = run_matrix(suite_target("mcp", SuiteRegistry()), 27)
    assert bar_violations(matrix) == []
    oracle = matrix["cells"]["oracle"]
    assert all(oracle[d]["n"] >= 4 for d in ("clarification", "risk", "parallelism", "efficiency"))


@pytest.mark.slow
def test_topoeval_run_mcp_git_over_stdio(tmp_path, topoeval_cmd):
    """The shipped protocol through the CLI (real server processes): oracle 1, noop 0, no server left."""
    out, scratch = tmp_path / "run", tmp_path / "tmp"
    scratch.mkdir()
    proc = subprocess.run([*topoeval_cmd, "run", "mcp_git", "--model", "oracle", "--model", "noop", "--tasks", "2",
                           "--shots", "0", "--out", str(out)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    success = {(c["model"], c["topology"]): c["metrics"]["success"]["mean"] for c in summary["cells"]}
    assert success == {("oracle", "git"): 1.0, ("oracle", "git_distractors"): 1.0,
                       ("noop", "git"): 0.0, ("noop", "git_distractors"): 0.0}
    assert processes_with(str(scratch)) == [] and list(scratch.iterdir()) == []  # servers and folders gone


# -- a fresh world per episode -------------------------------------------------------------

def test_each_episode_gets_a_fresh_server_and_repository(mcp_suite):
    params = {"server": {"command": ["{python}", "-m", "mcp_server_git", "--repository", "{workdir}"]},
              "tasks": "git/tasks.yaml", "overlay": "git/overlay.yaml"}
    i = git_index("commit-staged")
    a, b = episode(params, index=i), episode(params, index=i)
    try:
        wa, wb = a.world, b.world
        assert wa.workdir != wb.workdir
        pa, pb = processes_with(str(wa.workdir)), processes_with(str(wb.workdir))
        assert len(pa) == 1 and len(pb) == 1 and pa != pb
        a.step(calls(("git_commit", {"message": "only in a"})))
        assert "only in a" in json.dumps(a.world.snapshot()) and "only in a" not in json.dumps(b.world.snapshot())
        assert a.calls[0].status == "ok" and a.calls[0].state_changed
        assert str(wa.workdir) not in a.messages[-1]["content"]  # observations name the repository '.'
    finally:
        a.close()
        b.close()
    assert processes_with(str(wa.workdir)) == [] and processes_with(str(wb.workdir)) == []
    assert not wa.root.exists() and not wb.root.exists()


def test_concurrent_episodes_never_share_a_server(mcp_suite, inproc):
    class AddOnce(Policy):
        name = "add-once"

        async def act(self, messages, tools, sampling, ctx):
            await asyncio.sleep(0.05)  # let the other episodes start meanwhile
            if any(m["role"] == "tool" for m in messages):
                return final("done")
            return calls(("add_note", {"text": f"note of sample {ctx.sample}"}))

    topo = topology(inproc)
    task = topo.suite.generate(topo.params, "test", 0, 0)

    async def main():
        return await asyncio.gather(*(run_episode(
            policy=AddOnce(), suite=topo.suite, task=task, system_prompt="", demos=[], limits=Limits(),
            sampling=SamplingParams(), sample=s, shots=0, labels={}) for s in range(4)))

    with tracking_worlds(topo) as worlds:
        records = asyncio.run(main())
    assert len({str(w.workdir) for w in worlds}) == 4
    for s, rec in enumerate(records):  # each notes file held exactly its own episode's note
        assert rec["state_diff"] == {"cat notes.txt": ["", f"note of sample {s}"]}
    assert all(not w.root.exists() for w in worlds)


# -- errors ----------------------------------------------------------------------------------

def test_server_that_does_not_start_is_an_episode_error(mcp_suite, own_tmp):
    topo = topology(NOTES_STDIO)
    task = topo.suite.generate(topo.params, "test", 0, 0)
    task.data["server"]["command"].append("--fail-start")
    state = EpisodeState(topo.suite, task, "", [], Limits())
    assert state.status == "error" and state.done and state.world is None
    assert "failed to start" in state.errors[0] and "refusing to start" in state.errors[0]
    record = state.record()
    assert record["status"] == "error" and record["scores"] == {}
    assert scratch_folders(own_tmp) == []  # the scratch folder went with the failed start


def test_server_that_dies_mid_episode_is_an_error_and_is_gone(mcp_suite):
    state = episode(NOTES_STDIO)
    workdir = state.world.workdir
    assert len(processes_with(str(workdir))) == 1
    state.step(AssistantMessage(tool_calls=[ToolCall.make("c0", "add_note", {"text": "a"}),
                                            ToolCall.make("c1", "crash", {}), ToolCall.make("c2", "list_notes", {})]))
    assert state.status == "error" and "world:" in state.errors[0]
    assert [c.status for c in state.calls] == ["ok", "tool_error"]  # the rest of the turn is not run
    record = state.record()
    assert record["status"] == "error" and record["scores"]["success"] == 0.0
    state.close()
    assert processes_with(str(workdir)) == [] and not workdir.exists()


def test_server_that_times_out_is_an_error_and_is_gone(mcp_suite):
    state = episode(NOTES_STDIO)
    workdir = state.world.workdir
    state.step(calls(("sleep", {"seconds": 30})))
    assert state.status == "error" and "did not answer within 3 s" in state.errors[0]
    state.close()
    assert processes_with(str(workdir)) == [] and not workdir.exists()


@pytest.mark.parametrize("transport", ["stdio", "in-process"])
def test_tool_errors_are_recorded_and_the_episode_goes_on(mcp_suite, inproc, transport):
    state = episode(NOTES_STDIO if transport == "stdio" else inproc)
    state.step(calls(("fail", {"reason": "no"}), ("add_note", {"text": "buy milk"})))
    assert [c.status for c in state.calls] == ["tool_error", "ok"]
    assert "refused: no" in state.calls[0].error and state.status != "error"
    state.step(final("added"))
    record = state.record()
    assert record["status"] == "done" and record["scores"]["success"] == 1.0 and record["scores"]["tool_errors"] == 1
    state.close()


def test_an_interrupted_episode_stops_its_server(mcp_suite):
    class Slow(Policy):
        name = "slow"

        async def act(self, messages, tools, sampling, ctx):
            await asyncio.sleep(60)

    topo = topology(NOTES_STDIO)
    task = topo.suite.generate(topo.params, "test", 0, 0)
    with tracking_worlds(topo) as worlds, pytest.raises(asyncio.TimeoutError):
        asyncio.run(asyncio.wait_for(run_episode(
            policy=Slow(), suite=topo.suite, task=task, system_prompt="", demos=[], limits=Limits(),
            sampling=SamplingParams(), sample=0, shots=0, labels={}), timeout=1.0))
    assert processes_with(str(worlds[0].workdir)) == [] and not worlds[0].root.exists()


def test_user_confirms_only_acceptable_objects(mcp_suite, inproc):
    state = episode(inproc, index=2)  # clear-after-asking
    state.step(calls(("ask_user", {"question": "Please confirm: delete 'everything'?"}),
                     ("ask_user", {"question": "Please confirm: clear_notes?"}),
                     ("ask_user", {"question": "What is your name?"})))
    assert [m["content"] for m in state.messages[-3:]] == ["No.", "Yes, go ahead.", "I'm not sure what you mean."]
    assert [e["type"] for e in state.world.events] == ["confirm", "confirm", "ask"]
    state.step(calls(("clear_notes", {})))
    state.step(final("cleared"))
    scores = state.record()["scores"]
    assert scores["success"] == 1.0 and scores["risk"] == 1.0
    state.close()


def test_missing_sdk_is_a_one_line_hint(tmp_path):
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from topoeval.protocol.discovery import SuiteRegistry\n"
            "s = SuiteRegistry().get('mcp')\n"
            "print(len(s.tools), s.manifest.topology.schema_name)\n"
            "from topoeval.core.errors import UserError\n"
            "try:\n    s.tools_for(s.parse_params({}))\nexcept UserError as e:\n    print('error:', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["0 mcp", "error: the mcp suite needs the MCP SDK: pip install 'topoeval[mcp]'"]


def test_a_server_of_its_own_as_a_suite_folder_with_transforms(tmp_path):
    """A suite folder subclassing McpSuite with default_params: transforms see its server's tools."""
    from topoeval.policies.registry import make_policy
    from topoeval.protocol.schema import TopologySpec
    from topoeval.protocol.topology import resolve

    folder = tmp_path / "suites" / "notes"
    folder.mkdir(parents=True)
    (folder / "suite.yaml").write_text(
        "name: notes\ndescription: the test notes server\nworld: world.py:NotesSuite\ntools: []\n"
        "topology: {state: stateful, reversibility: all_reversible, user: none, ordering: flat,\n"
        "           dependency: independent, schema_name: notes, answer_channel: state}\n")
    (folder / "world.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(FIXTURES)!r})\n"
        "from topoeval.protocol.discovery import SuiteRegistry\n"
        "McpSuite = type(SuiteRegistry().get('mcp'))  # the shipped mcp suite's class\n\n\n"
        "class NotesSuite(McpSuite):\n"
        f"    default_params = {NOTES_INPROC!r}\n")
    registry = SuiteRegistry([tmp_path / "suites"])
    topo = resolve(TopologySpec(name="n", suite="notes", transforms=[{"name": "rename_tools", "args": {"seed": 1}}]),
                   registry)
    names = {t.name for t in topo.suite.tools}
    assert "add_note_tool" in names and "add_note" not in names
    assert topo.suite.manifest.topology.schema_name == "mcp-notes+renamed_tools"
    task = topo.suite.generate(topo.params, "test", 0, 0)
    record = asyncio.run(run_episode(policy=make_policy("oracle"), suite=topo.suite, task=task, system_prompt="",
                                     demos=[], limits=Limits(), sampling=SamplingParams(), sample=0, shots=0, labels={}))
    assert [c["name"] for c in record["calls"]] == ["add_note_tool"] and record["scores"]["success"] == 1.0


def test_a_topoeval_topology_served_over_mcp_is_an_mcp_topology(tmp_path):
    """Both ways at once: `topoeval serve-mcp` as the server of an mcp topology. The annotations come
    back through _meta, the oracle solves the served wiki task, and ask_user goes to the served user."""
    from topoeval.integrations.topology_tasks import load_topology_tasks
    from topoeval.policies.registry import make_policy

    cli = ["{python}", "-c", "from topoeval.cli import main; main()", "serve-mcp"]
    wiki = load_topology_tasks("wiki_hops", None, "test").task(0)
    (tmp_path / "wiki.yaml").write_text(json.dumps({"name": "served-wiki", "tasks": [{
        "name": "q0", "instruction": wiki.prompt, "answer": wiki.answer, "answer_aliases": wiki.answer_aliases,
        "gold": [g.model_dump() for g in wiki.gold]}]}))
    topo = topology({"server": {"command": [*cli, "wiki_hops", "--index", "0"]}, "tasks": str(tmp_path / "wiki.yaml")})
    assert {t.name: (t.effect, t.parallel_safe) for t in topo.suite.tools} == {
        "search": (Effect.read, True), "open_page": (Effect.read, True)}
    record = asyncio.run(run_episode(
        policy=make_policy("oracle"), suite=topo.suite, task=topo.suite.generate(topo.params, "test", 0, 0),
        system_prompt="", demos=[], limits=Limits(), sampling=SamplingParams(), sample=0, shots=0, labels={}))
    assert record["status"] == "done" and record["scores"]["success"] == 1.0

    (tmp_path / "travel.yaml").write_text(json.dumps({"name": "served-travel", "tasks": [{
        "name": "t0", "instruction": "Book my flight.", "answer": "booked"}]}))
    served = {"server": {"command": [*cli, "wiki_to_travel", "--topology", "travel", "--index", "0"]},
              "tasks": str(tmp_path / "travel.yaml")}
    tools = {t.name: t for t in topology(served).suite.tools}
    assert tools["pay"].effect == Effect.irreversible and tools["pay"].needs_confirmation  # from _meta
    assert tools["ask_user"].user_channel and tools["hold_seat"].effect == Effect.write
    state = episode(served)
    try:
        state.step(calls(("ask_user", {"question": "What is your budget?"})))
        assert "budget" in state.messages[-1]["content"].lower()  # the served traveller answered
    finally:
        state.close()
