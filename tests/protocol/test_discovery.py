"""Finding suites and protocols without the repository's location: shipped suites are topoeval's own
``topoeval.suites`` entry points, shipped protocols package data, and both load from any folder."""

import os
import subprocess
import sys
from importlib.metadata import EntryPoint
from importlib.resources import files
from pathlib import Path

import pytest

from topoeval.core.errors import UserError
from topoeval.protocol import discovery
from topoeval.protocol.discovery import SuiteRegistry, protocol_names, resolve_protocol_path, suite_entry_points

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ["agentdojo", "bfcl", "mcp", "tau2", "travel", "wiki"]


def test_every_shipped_suite_is_an_entry_point_of_topoevals_distribution():
    eps = suite_entry_points()
    assert set(SHIPPED) <= set(eps)
    for name in SHIPPED:
        assert eps[name].dist.name == "topoeval" and eps[name].value == f"topoeval_tool_suites:{name}"
        assert eps[name].load()() == Path(str(files("topoeval_tool_suites") / name))


def test_the_shipped_suites_load_through_their_entry_points(monkeypatch):
    monkeypatch.delenv("TOPOEVAL_SUITES_PATH", raising=False)
    registry = SuiteRegistry()
    assert registry.dirs == [] and set(SHIPPED) <= set(registry.names())
    assert registry.get("wiki").manifest.name == "wiki"


def test_shipped_protocols_are_package_data():
    folder = discovery.shipped_protocols_dir()
    assert folder == Path(str(files("topoeval_protocols")))
    assert protocol_names() == sorted(p.stem for p in (ROOT / "protocols").glob("*.yaml"))  # every one of them
    assert resolve_protocol_path("wiki_hops") == folder / "wiki_hops.yaml"
    with pytest.raises(UserError, match="unknown protocol 'wiki_hop' \\(did you mean 'wiki_hops'\\?\\)"):
        resolve_protocol_path("wiki_hop")


def fake_entry_point(name: str, value: str, dist_name: str) -> EntryPoint:
    ep = EntryPoint(name, value, discovery.ENTRY_POINT_GROUP)
    dist = type("Dist", (), {"name": dist_name})()
    return ep._for(dist)


def test_a_third_party_suite_cannot_take_a_shipped_name(monkeypatch, fixture_suites):
    theirs = [fake_entry_point("wiki", "elsewhere:wiki", "someone-else"),
              fake_entry_point("echo2", "elsewhere:echo", "someone-else")]
    real = discovery.entry_points
    monkeypatch.setattr(discovery, "entry_points", lambda group: [*theirs, *real(group=group)])
    eps = suite_entry_points()
    assert eps["wiki"].dist.name == "topoeval" and eps["echo2"].value == "elsewhere:echo"
    assert SuiteRegistry([fixture_suites]).names()[:2] == ["agentdojo", "bfcl"]


def test_a_folder_wins_over_an_entry_point(tmp_path, fixture_suites):
    mine = tmp_path / "suites" / "wiki"
    mine.mkdir(parents=True)
    for f in (fixture_suites / "echo").iterdir():
        if f.is_file():
            (mine / f.name).write_text(f.read_text().replace("name: echo", "name: wiki"))
    registry = SuiteRegistry([tmp_path / "suites"])
    assert registry._folders["wiki"] == mine and "wiki" in registry


def test_a_stale_egg_info_in_the_current_folder_hides_no_shipped_suite(tmp_path):
    """An old build's topoeval.egg-info (no entry points) first on sys.path, as in a checkout's root."""
    egg = tmp_path / "topoeval.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: topoeval\nVersion: 0.1.0\n")
    (egg / "entry_points.txt").write_text("[console_scripts]\ntopoeval = topoeval.cli:main\n")
    code = "from topoeval.protocol.discovery import SuiteRegistry; print(','.join(SuiteRegistry().names()))"
    env = {k: v for k, v in os.environ.items() if k != "TOPOEVAL_SUITES_PATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, check=True)
    assert set(SHIPPED) <= set(out.stdout.strip().split(","))


def test_protocols_and_suites_from_any_folder(tmp_path, topoeval_cmd):
    """From an empty folder, neither the checkout nor its layout is needed (the wheel check does the same
    from a wheel)."""
    proc = subprocess.run([*topoeval_cmd, "validate", "mcp_git"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.iterdir())


def test_a_file_in_the_current_folder_does_not_shadow_a_shipped_protocol(tmp_path, monkeypatch, cli):
    """A bare name is a shipped protocol's (issue 43: a file called `wiki_to_travel` in the current
    folder used to be read instead); a path must look like one (a separator, or .yaml/.yml)."""
    from topoeval.core.errors import UserError
    from topoeval.protocol.discovery import resolve_protocol_path, shipped_protocols_dir
    from topoeval.protocol.loader import load_protocol

    monkeypatch.chdir(tmp_path)
    decoy = (shipped_protocols_dir() / "wiki_hops.yaml").read_text().replace("name: wiki_hops", "name: decoy")
    (tmp_path / "wiki_to_travel").write_text(decoy)
    assert resolve_protocol_path("wiki_to_travel") == shipped_protocols_dir() / "wiki_to_travel.yaml"
    assert load_protocol("wiki_to_travel").name == "wiki_to_travel"
    assert load_protocol("./wiki_to_travel").name == "decoy"  # as a path, it is the file
    proc = cli("validate", "wiki_to_travel")
    assert proc.returncode == 0 and proc.stdout.strip() == "wiki_to_travel: ok"
    (tmp_path / "mine").write_text(decoy)
    with pytest.raises(UserError, match="unknown protocol 'mine'.*write ./mine"):
        resolve_protocol_path("mine")
