"""Reading a run folder runs nothing (#56): ``report``, ``compare``, ``publish --dry-run``, ``merge``,
``export --from-run`` and ``user-agreement`` never start a server, run a fixture, import a module or
resolve a suite from what a folder's run.json names.

Each reader is given a real oracle run whose run.json was then crafted: its protocol names MCP topologies
whose server command, fixture step or server module would each leave a marker file, and a suite folder
(its ``config.suites_dirs``) whose Python module would leave one when imported; its ``config.protocol``
names a protocol file in the folder that holds the same. The reader ends (its
work done, or a one-line refusal) and no marker exists.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

import topoeval

MARKERS = ("server-command", "fixture-step", "module-import", "suite-import")


def _touch(path: Path) -> str:
    return f"open({str(path)!r}, 'w').close()"


def _craft(root: Path, fixture_suites: Path, variant: str) -> dict:
    """Markers' folder ``root/markers``; returns the crafted protocol (a dict, as run.json holds it)."""
    marks = root / "markers"
    marks.mkdir()
    tasks = root / "hostile" / "tasks.yaml"
    tasks.parent.mkdir()
    tasks.write_text(json.dumps({
        "name": "hostile",
        "fixtures": {"boom": [{"run": [sys.executable, "-c", _touch(marks / "fixture-step")]}]},
        "tasks": [{"name": "t", "fixture": "boom", "instruction": "Say hi.", "answer": "hi"}],
    }))
    (root / "hostile" / "marker_module.py").write_text(_touch(marks / "module-import") + "\n\n"
                                                       "def make(**kwargs):\n    raise RuntimeError('ran')\n")
    evil = root / "hostile" / "suites" / "evil"  # a suite folder whose module leaves a marker when imported
    evil.mkdir(parents=True)
    manifest = (fixture_suites / "echo" / "suite.yaml").read_text().replace("name: echo\n", "name: evil\n", 1)
    (evil / "suite.yaml").write_text(manifest)
    (evil / "world.py").write_text(_touch(marks / "suite-import") + "\n"
                                   + (fixture_suites / "echo" / "world.py").read_text())
    server = ({"command": [sys.executable, "-c", _touch(marks / "server-command")]} if variant == "command"
              else {"object": "marker_module:make"})
    mcp = {"suite": "mcp", "params": {"server": server, "tasks": str(tasks)}}
    return {"name": "echo_proto", "train": {"name": "echo-a", **mcp},
            "test": [{"name": "echo-a", "role": "id", **mcp}, {"name": "echo-b", "role": "ood", "suite": "evil"}],
            "tasks": {"test": {"n": 1, "seed": 1}, "fewshot": {"n": 4, "seed": 2}}, "baselines": {"shots": [0]}}


@pytest.fixture(params=["command", "module"])
def crafted(request, tmp_path, echo_protocol, fixture_suites, monkeypatch):
    """(run folder, protocol file the user has, markers folder): the run.json names hostile topologies."""
    protocol = echo_protocol(n=1)
    run = topoeval.run_protocol(protocol, ["oracle"], tmp_path / "run", suites_dirs=[fixture_suites]).run_dir
    hostile = _craft(tmp_path, fixture_suites, request.param)
    monkeypatch.syspath_prepend(str(tmp_path / "hostile"))  # the module a resolve would import is importable
    meta = json.loads((run / "run.json").read_text())
    meta["protocol"] = hostile
    (run / "protocol.yaml").write_text(json.dumps(hostile))  # and the protocol file its config names
    meta["config"] = {**meta["config"], "suites_dirs": [str(tmp_path / "hostile" / "suites")],
                      "protocol": str(run / "protocol.yaml")}
    (run / "run.json").write_text(json.dumps(meta))
    yield run, protocol, tmp_path / "markers"
    for name in [m for m in sys.modules if m == "marker_module" or m.startswith("topoeval_suite_evil")]:
        del sys.modules[name]  # the next test's hostile modules are imported afresh (if at all)


def _ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def _ends_cleanly(proc, refusal: str | None = None) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr
    if refusal is None:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 2 and refusal in proc.stderr, proc.stderr


def test_the_crafted_protocol_would_run_each_marker_if_resolved(crafted, tmp_path):
    """The markers are live: resolving the crafted protocol's topologies (what the old readers did) runs them."""
    from topoeval.core.errors import UserError
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.protocol.schema import Protocol
    from topoeval.protocol.topology import resolve

    run, _, markers = crafted
    meta = json.loads((run / "run.json").read_text())
    registry = SuiteRegistry([Path(p) for p in meta["config"]["suites_dirs"]])
    for spec in Protocol.model_validate(meta["protocol"]).topologies():
        try:
            resolve(spec, registry)
        except (UserError, RuntimeError):
            pass  # the hostile server never answers: what it ran before is the point
    assert {"fixture-step", "suite-import"} <= set(_ran(markers))
    assert {"server-command", "module-import"} & set(_ran(markers))


def test_report_runs_nothing_a_run_json_names(crafted, cli):
    run, _, markers = crafted
    proc = cli("report", str(run))
    assert _ran(markers) == []
    _ends_cleanly(proc)


def test_compare_runs_nothing_a_run_json_names(crafted, cli):
    run, _, markers = crafted
    proc = cli("compare", str(run), str(run))
    assert _ran(markers) == []
    _ends_cleanly(proc)


def test_publish_dry_run_runs_nothing_a_run_json_names(crafted, cli, tmp_path):
    run, _, markers = crafted
    _ends_cleanly(cli("publish", str(run), "--repo", "org/results", "--dry-run", "--offline",
                      "--out", str(tmp_path / "staged")))
    assert _ran(markers) == []


def test_merge_runs_nothing_a_run_json_names(crafted, cli, tmp_path):
    run, _, markers = crafted
    _ends_cleanly(cli("merge", str(run), "--out", str(tmp_path / "merged")))
    assert _ran(markers) == []
    shutil.rmtree(tmp_path / "merged")
    _ends_cleanly(cli("merge", str(run)))  # in place
    assert _ran(markers) == []


def test_export_from_run_uses_the_named_protocol_and_refuses_the_crafted_one(crafted, cli, tmp_path,
                                                                             fixture_suites):
    run, protocol, markers = crafted
    proc = cli("export", str(protocol), "--format", "sft", "--policy", "none", "--from-run", str(run),
               "--split", "test", "--out", str(tmp_path / "sft"), "--suites-dir", str(fixture_suites))
    assert _ran(markers) == []
    _ends_cleanly(proc, refusal="other content than the protocol 'echo_proto'")
    assert not (tmp_path / "sft" / "sft.parquet").exists()


def test_user_agreement_loads_neither_the_protocol_nor_the_suites_a_run_json_names(crafted, fixture_suites):
    """``user-agreement`` rebuilds worlds, from the protocol and suite folders its caller gives (default: the
    shipped protocol of the recorded name), never from the files run.json's config names."""
    from topoeval.analysis.user_agreement import user_agreement
    from topoeval.core.errors import UserError

    run, protocol, markers = crafted
    with pytest.raises(UserError, match="its protocol 'echo_proto' is not a shipped one"):
        user_agreement(run, "direct:user")
    with pytest.raises(UserError, match="other content than the protocol 'echo_proto'"):
        user_agreement(run, "direct:user", protocol=protocol, suites_dirs=[fixture_suites])
    assert _ran(markers) == []


def test_the_user_agreement_command_takes_the_protocol_and_suite_folders_from_its_caller(crafted, fixture_suites,
                                                                                         cli):
    """``topoeval user-agreement --protocol P --suites-dir D`` hands both to the check: a folder whose run.json
    records other content than P is refused in one line, and nothing the folder names runs."""
    run, protocol, markers = crafted
    proc = cli("user-agreement", str(run), "--user-model", "direct:user", "--protocol", str(protocol),
                        "--suites-dir", str(fixture_suites))
    assert _ran(markers) == []
    _ends_cleanly(proc, refusal="other content than the protocol 'echo_proto'")
