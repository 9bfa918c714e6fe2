"""run.json's commit is topoeval's own: recorded from its checkout, never from another repository."""

import subprocess
from pathlib import Path

import pytest

from topoeval.core.provenance import git_provenance, source_checkout


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def repo(root: Path, project: str) -> Path:
    """A git repository whose pyproject.toml names ``project``, with a committed topoeval/ package folder."""
    (root / "topoeval").mkdir(parents=True)
    (root / "topoeval" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(f'[project]\nname = "{project}"\n')
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root / "topoeval"


def test_a_checkout_of_topoeval_gives_its_commit_and_whether_it_is_dirty(tmp_path):
    package = repo(tmp_path / "clone", "topoeval")
    assert source_checkout(package) == tmp_path / "clone"
    assert git_provenance(package) == {"git_commit": git(tmp_path / "clone", "rev-parse", "HEAD"), "git_dirty": False}
    (package / "__init__.py").write_text("x = 1\n")
    assert git_provenance(package)["git_dirty"] is True


def test_a_wheel_inside_another_repository_records_no_commit(tmp_path):
    """site-packages of a virtualenv that sits in some project's checkout: not topoeval's commit."""
    repo(tmp_path / "project", "someone-elses")
    site = tmp_path / "project" / ".venv" / "lib" / "python3.11" / "site-packages" / "topoeval"
    site.mkdir(parents=True)
    assert source_checkout(site) is None and git_provenance(site) == {}
    other = repo(tmp_path / "other", "not-topoeval")  # a package folder named topoeval in another project
    assert source_checkout(other) is None and git_provenance(other) == {}


@pytest.mark.parametrize("pyproject", [None, "not toml [", '[tool.x]\nname = "topoeval"\n'])
def test_no_commit_without_a_pyproject_naming_topoeval(tmp_path, pyproject):
    package = repo(tmp_path / "clone", "topoeval")
    if pyproject is None:
        (tmp_path / "clone" / "pyproject.toml").unlink()
    else:
        (tmp_path / "clone" / "pyproject.toml").write_text(pyproject)
    assert git_provenance(package) == {}


def test_no_git_folder_no_commit(tmp_path):
    (tmp_path / "topoeval").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "topoeval"\n')
    assert git_provenance(tmp_path / "topoeval") == {}
