"""Nothing run that you did not ask for, and no key leaves with a command (issue 43).

`topoeval validate` of a protocol that would start an MCP server, run fixture commands or import a
module runs none of them (one line says so) unless --allow-commands; the commands a protocol does
run (fixture, state and check commands, stdio servers) get an environment without API keys and
tokens, except the variables it names in ``pass_env``. Real subprocesses throughout: each command
would leave a marker file, or writes the environment it got."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from topoeval.core.commands import BASE_ENV, CommandsRefused, command_env, commands_refused, guard

SECRETS = {"OPENAI_API_KEY": "sk-open-0123", "HF_TOKEN": "hf_0123", "AWS_SECRET_ACCESS_KEY": "aws0123",
           "GITHUB_TOKEN": "ghp_0123", "DB_PASSWORD": "pw0123", "MY_SERVICE_SECRET": "s0123"}


def marker_protocol(tmp_path: Path, server: dict) -> tuple[Path, Path]:
    """A protocol whose task file's fixture would write ``fixture.marker``; the ``server`` given."""
    marker = tmp_path / "fixture.marker"
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(json.dumps({
        "name": "t", "fixtures": {"base": [{"run": [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]}]},
        "tasks": [{"name": "a", "split": "test", "fixture": "base", "instruction": "hi", "answer": "x"}]}))
    protocol = tmp_path / "p.yaml"
    topo = {"suite": "mcp", "params": {"server": server, "tasks": str(tasks)}}
    protocol.write_text(json.dumps({"name": "p", "train": {"name": "a", **topo},
                                    "test": [{"name": "a", "role": "id", **topo}], "tasks": {"test": {"n": 1}}}))
    return protocol, marker


def test_validate_runs_no_server_command_and_no_fixture_unless_allowed(tmp_path, topoeval_cmd):
    server_marker = tmp_path / "server.marker"
    server = {"command": [sys.executable, "-c", f"open({str(server_marker)!r}, 'w')"], "startup_timeout_s": 5}
    protocol, fixture_marker = marker_protocol(tmp_path, server)
    proc = subprocess.run([*topoeval_cmd, "validate", str(protocol)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not fully checked: it would run command" in lines[0] and "nothing was run" in lines[0]
    assert not fixture_marker.exists() and not server_marker.exists()
    proc = subprocess.run([*topoeval_cmd, "validate", "--allow-commands", str(protocol)], capture_output=True,
                          text=True, timeout=120)
    assert fixture_marker.exists() and server_marker.exists()  # asked for: run


def test_validate_imports_no_module_a_protocol_names(tmp_path, topoeval_cmd):
    marker = tmp_path / "import.marker"
    (tmp_path / "evil_factory.py").write_text(f"open({str(marker)!r}, 'w')\ndef make(**kw):\n    return None\n")
    protocol, fixture_marker = marker_protocol(tmp_path, {"object": "evil_factory:make"})
    fixture_marker.parent.mkdir(exist_ok=True)
    tasks = json.loads((tmp_path / "tasks.yaml").read_text())
    tasks["fixtures"] = {}
    del tasks["tasks"][0]["fixture"]
    (tmp_path / "tasks.yaml").write_text(json.dumps(tasks))
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([*topoeval_cmd, "validate", str(protocol)], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 2 and "import of module 'evil_factory'" in proc.stderr and not marker.exists()


def test_a_refusal_is_recorded_and_raised():
    with commands_refused() as refused:
        with pytest.raises(CommandsRefused, match="not run: command 'rm -rf x'"):
            guard("command 'rm -rf x'")
    assert refused == ["command 'rm -rf x'"]
    guard("command 'true'")  # outside: allowed


def test_fixture_and_check_commands_get_no_keys_unless_named(tmp_path, monkeypatch):
    load_mcp_suite()
    from topoeval_suite_mcp.taskfile import build_fixture, run_command

    for name, value in {**SECRETS, "MY_TOOL_HOME": "/opt/tool", "LANG": "C.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    dump = [sys.executable, "-c", "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w'))"]
    build_fixture([{"run": [*dump, "fixture.json"]}], tmp_path, {"SET_BY_FILE": "1"})
    seen = json.loads((tmp_path / "fixture.json").read_text())
    assert not set(SECRETS) & set(seen) and "MY_TOOL_HOME" not in seen
    assert seen["SET_BY_FILE"] == "1" and seen["LANG"] == "C.UTF-8" and "PATH" in seen
    run_command([*dump, "check.json"], tmp_path, {}, ["HF_TOKEN", "MY_TOOL_HOME"])  # named: passed
    seen = json.loads((tmp_path / "check.json").read_text())
    assert seen["HF_TOKEN"] == "hf_0123" and seen["MY_TOOL_HOME"] == "/opt/tool"
    assert not (set(SECRETS) - {"HF_TOKEN"}) & set(seen)


def test_a_stdio_servers_environment_has_no_keys_unless_named(tmp_path, monkeypatch):
    load_mcp_suite()
    from topoeval_suite_mcp.params import ServerSpec

    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    spec = ServerSpec(command=["{python}", "-m", "some_server"], env={"X": "{workdir}"})
    target = spec.target(tmp_path)
    assert not set(SECRETS) & set(target.env) and target.env["X"] == str(tmp_path)
    named = ServerSpec(command=["{python}", "-m", "some_server"], pass_env=["GITHUB_TOKEN"])
    env = named.target(tmp_path).env
    assert env["GITHUB_TOKEN"] == "ghp_0123" and "OPENAI_API_KEY" not in env
    assert "pass_env" not in spec.model_dump() and named.model_dump()["pass_env"] == ["GITHUB_TOKEN"]


def test_the_task_files_pass_env_reaches_the_episodes_commands(tmp_path):
    load_mcp_suite()
    from topoeval_suite_mcp.taskfile import load_task_file

    path = tmp_path / "t.yaml"
    path.write_text("name: t\npass_env: [GIT_SSH_COMMAND]\ntasks:\n  - {name: a, instruction: hi, answer: x}\n")
    assert load_task_file(path).pass_env == ["GIT_SSH_COMMAND"]


def test_the_base_environment_holds_no_credential():
    assert not [n for n in BASE_ENV if any(s in n for s in ("KEY", "TOKEN", "SECRET", "PASSWORD", "AWS"))]
    assert set(command_env(env={"A": "1"})) <= {*BASE_ENV, "A"}


def load_mcp_suite() -> None:
    """Load the mcp suite as a run does (its folder becomes the package topoeval_suite_mcp); importing
    topoeval_tool_suites.mcp.* directly would shadow that package's `mcp` entry-point function."""
    from topoeval.protocol.discovery import SuiteRegistry

    SuiteRegistry().get("mcp")
