"""A suite author's mistakes caught, not scored (issue 27): a topology over mcp-server-time written
from docs/suites-mcp.md and docs/suites-mcp-tasks.md alone (tests/fixtures/mcp/time), then the mistakes
a new author makes — a misspelled tool in a gold plan, arguments the server rejects, a task file next to
the protocol."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed (the mcp extra has it)")

import topoeval  # noqa: E402
from topoeval.core.errors import ProtocolErrors  # noqa: E402
from topoeval.core.policy import SamplingParams  # noqa: E402
from topoeval.policies.registry import make_policy  # noqa: E402
from topoeval.protocol.discovery import SuiteRegistry  # noqa: E402
from topoeval.protocol.loader import load_protocol  # noqa: E402
from topoeval.protocol.schema import Limits  # noqa: E402
from topoeval.protocol.topology import topology_from  # noqa: E402
from topoeval.runner.episode import run_episode  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "time"


def example_copy(where: Path, edit=lambda text: text) -> Path:
    """The example protocol and its task file (edited) in ``where``; the protocol's path."""
    where.mkdir(parents=True)
    shutil.copy(EXAMPLE / "protocol.yaml", where / "protocol.yaml")
    (where / "tasks.yaml").write_text(edit((EXAMPLE / "tasks.yaml").read_text()))
    return where / "protocol.yaml"


def misspelled(text: str) -> str:
    return text.replace("tool: convert_time,", "tool: convert_tme,", 1)  # the first task's gold call only


def oracle_episode(topology, index: int):
    import asyncio

    task = topology.tasks("test", 0, index + 1)[index]
    return asyncio.run(run_episode(policy=make_policy("oracle"), suite=topology.suite, task=task, system_prompt="",
                                   demos=[], limits=Limits(), sampling=SamplingParams(), sample=0, shots=0,
                                   labels={}))


def test_the_example_as_a_new_user_wrote_it_oracle_one_noop_and_random_zero(tmp_path):
    res = topoeval.run_protocol(EXAMPLE / "protocol.yaml", ["oracle", "noop", "random"], tmp_path / "run")
    success = {m: res.cell(m, "time_test")["metrics"]["success"]["mean"] for m in ("oracle", "noop", "random")}
    assert success == {"oracle": 1.0, "noop": 0.0, "random": 0.0}


def test_a_misspelled_tool_in_a_gold_plan_is_one_line_of_validate_naming_the_task_and_the_tool(
        tmp_path, topoeval_cmd):
    protocol = example_copy(tmp_path / "authored", misspelled)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([*topoeval_cmd, "validate", "--allow-commands", str(protocol)], capture_output=True, text=True, timeout=300,
                          cwd=elsewhere)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert ("train.params: tasks.yaml: task 'tokyo-to-kolkata': gold call 'convert' uses tool 'convert_tme', which "
            "the server does not offer (did you mean 'convert_time'?)") in lines[0]
    with pytest.raises(ProtocolErrors, match="convert_tme"):  # so `topoeval run` refuses it too
        load_protocol(protocol)


def test_an_oracle_whose_plan_errors_fails_that_task(tmp_path):
    """Where no protocol check stands in the way (a topology given as a dict, or arguments the server
    rejects): the oracle's plan errors, it says so, and the task fails instead of passing on the
    repeated answer."""
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(misspelled((EXAMPLE / "tasks.yaml").read_text()))
    server = {"command": ["{python}", "-m", "mcp_server_time", "--local-timezone", "UTC"]}
    topology = topology_from({"suite": "mcp", "params": {"server": server, "tasks": str(tasks)}})
    record = oracle_episode(topology, 0)
    assert record["calls"][0]["status"] == "invalid" and "convert_tme" in record["calls"][0]["error"]
    assert record["final_answer"].startswith("The task's gold plan failed: convert_tme")
    assert record["scores"]["success"] == 0.0
    # a tool that errors on its arguments: the same
    tasks.write_text((EXAMPLE / "tasks.yaml").read_text().replace("target_timezone: Asia/Tokyo}}", "target_timezone: Asia/Tokio}}", 1))
    record = oracle_episode(topology_from({"suite": "mcp", "params": {"server": server, "tasks": str(tasks)}}), 1)
    assert record["calls"][0]["status"] == "tool_error" and record["scores"]["success"] == 0.0
    assert oracle_episode(topology_from({"suite": "mcp", "params": {"server": server, "tasks": str(tasks)}}),
                          0)["scores"]["success"] == 1.0  # the other tasks are untouched


def test_relative_paths_resolve_from_the_protocol_folder_not_the_cwd(tmp_path, topoeval_cmd, monkeypatch):
    protocol = example_copy(tmp_path / "authored")
    decoy = tmp_path / "cwd"
    decoy.mkdir()
    (decoy / "tasks.yaml").write_text(misspelled((EXAMPLE / "tasks.yaml").read_text()))  # a tasks.yaml in the cwd
    proc = subprocess.run([*topoeval_cmd, "validate", "--allow-commands", str(protocol)], capture_output=True, text=True, timeout=300,
                          cwd=decoy)
    assert proc.returncode == 0 and proc.stdout.strip().endswith(": ok"), proc.stdout + proc.stderr
    monkeypatch.chdir(decoy)
    loaded = load_protocol(protocol)
    topo = topology_from(loaded.test[0].name, protocol=loaded)
    assert topo.params.task_path() == tmp_path / "authored" / "tasks.yaml"
    # without a protocol file, a relative path is the current folder's
    server = {"command": ["{python}", "-m", "mcp_server_time"]}
    here = topology_from({"suite": "mcp", "params": {"server": server, "tasks": "tasks.yaml"}})
    assert here.params.task_path() == decoy / "tasks.yaml"
    # a missing file names where it was looked for
    (tmp_path / "authored" / "tasks.yaml").unlink()
    with pytest.raises(ProtocolErrors, match=r"no such file: tasks.yaml \(looked in .*authored"):
        load_protocol(protocol, SuiteRegistry())
