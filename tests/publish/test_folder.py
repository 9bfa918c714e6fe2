"""``publish --dry-run --out DIR`` never deletes what topoeval did not write (issue 43: it used to
``rmtree`` DIR first, so ``--out results``, ``--out .`` or ``--out RUN`` destroyed data), and
``--private`` makes an existing public repo private (the FakeHub of hub_server.py stands in for
the Hub, which cannot be reached from the test machines)."""

import subprocess
from pathlib import Path

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.publish import publish
from topoeval.publish.folder import MARKER

from .hub_server import FakeHub


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("results")
    return Path(topoeval.run_protocol("wiki_hops", ["oracle"], base / "wiki_hops" / "r1", tasks=1, shots=[0]).run_dir)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_out_equal_to_inside_or_holding_the_run_is_refused_and_nothing_changes(run):
    before = snapshot(run.parent.parent)
    for out in (run, run / "preview", run.parent, run.parent.parent):
        with pytest.raises(UserError, match="run folder"):
            publish([run], "org/board", dry_run=out, offline=True)
    assert snapshot(run.parent.parent) == before


def test_a_folder_topoeval_did_not_write_is_refused_untouched(run, tmp_path):
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(UserError, match="did not write"):
        publish([run], "org/board", dry_run=mine, offline=True)
    assert snapshot(mine) == {"thesis.tex": b"years of work"}
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        publish([run], "org/board", dry_run=afile, offline=True)
    assert afile.read_text() == "x"


def test_the_current_folder_is_refused_from_the_cli(run, tmp_path, topoeval_cmd):
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "keep.txt").write_text("mine")
    proc = subprocess.run([*topoeval_cmd, "publish", str(run), "--repo", "org/board", "--dry-run", "--out", ".",
                           "--offline"], capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 2, proc.stderr
    assert "did not write" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert snapshot(cwd) == {"keep.txt": b"mine"}


def test_a_new_an_empty_or_an_earlier_staging_folder_is_written(run, tmp_path):
    new = tmp_path / "a" / "preview"
    done = publish([run], "org/board", dry_run=new, offline=True)
    assert (new / "README.md").is_file() and (new / MARKER).is_file() and done["folder"] == str(new)
    first = snapshot(new)
    publish([run], "org/board", dry_run=new, offline=True)  # a second dry run replaces its own staging
    assert set(snapshot(new)) == set(first)
    empty = tmp_path / "empty"
    empty.mkdir()
    publish([run], "org/board", dry_run=empty, offline=True)
    assert (empty / "README.md").is_file()
    assert not [p for p in tmp_path.rglob(".topoeval-publish-*")]  # no temporary folder left behind
    (new / "mine.txt").write_text("added by hand")  # a staging folder with a user's file in it: refused
    with pytest.raises(UserError, match="mine.txt"):
        publish([run], "org/board", dry_run=new, offline=True)
    assert (new / "mine.txt").read_text() == "added by hand" and (new / "README.md").is_file()


def test_private_makes_an_existing_public_repo_private(run):
    with FakeHub() as hub:
        publish([run], "org/board", endpoint=hub.url, retry_wait=0.01)
        assert hub.visibility["org/board"] == "public"
        publish([run], "org/board", endpoint=hub.url, retry_wait=0.01, private=True)
        assert hub.visibility["org/board"] == "private"
        publish([run], "org/board", endpoint=hub.url, retry_wait=0.01)  # without --private: left as it is
        assert hub.visibility["org/board"] == "private"
        commits = len(hub.commits)
        hub.fail_next = [("PUT", r"/settings$", 403)]
        with pytest.raises(UserError, match="could not make org/board private"):
            publish([run], "org/board", endpoint=hub.url, retry_wait=0.01, private=True)
        assert len(hub.commits) == commits  # refused before anything was uploaded


def test_private_creates_a_new_repo_private(run):
    with FakeHub() as hub:
        publish([run], "org/fresh", endpoint=hub.url, retry_wait=0.01, private=True)
        assert hub.visibility["org/fresh"] == "private"
