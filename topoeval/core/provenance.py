"""Where the running topoeval comes from: its git commit, only when it is imported from a checkout.

``run.json`` records the package version always, and the commit only when it means something: the
package's parent folder must be a git work tree whose ``pyproject.toml`` names the project
``topoeval`` (a clone of this repository, installed editable or put on ``sys.path``). An installed
wheel sits in ``site-packages``, whose parent may well be some other repository (a virtualenv inside
a project's checkout): then nothing is recorded, never that repository's commit.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

#: the project name pyproject.toml must give for its folder to count as topoeval's own checkout
PROJECT = "topoeval"
#: the folders whose changes make a checkout's commit not the whole story (``git_dirty``)
SOURCE_FOLDERS = ("topoeval", "tool_suites", "protocols", "adapters", "pyproject.toml")


def package_dir() -> Path:
    """The folder of the imported ``topoeval`` package."""
    return Path(__file__).resolve().parents[1]


def source_checkout(package: Path | None = None) -> Path | None:
    """The root of topoeval's own git checkout that ``package`` (default: the imported one) lives in, else None."""
    package = package or package_dir()
    root = package.parent
    pyproject = root / "pyproject.toml"
    if package.name != PROJECT or not (root / ".git").exists() or not pyproject.is_file():
        return None
    try:
        name = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
        return None
    return root if name == PROJECT else None


def git_provenance(package: Path | None = None) -> dict[str, str | bool]:
    """``{"git_commit": sha, "git_dirty": bool}`` of topoeval's own checkout, or {} (a wheel, no git).

    ``git_dirty``: the package, its suites, protocols, adapters or pyproject.toml differ from that
    commit (tracked files only)."""
    root = source_checkout(package)
    if root is None:
        return {}
    try:
        head = _git(root, "rev-parse", "HEAD").stdout.strip()
        diff = _git(root, "diff", "--quiet", "HEAD", "--", *SOURCE_FOLDERS, check=False).returncode
    except (OSError, subprocess.SubprocessError):
        return {}
    if not head:
        return {}
    return {"git_commit": head, **({"git_dirty": diff == 1} if diff in (0, 1) else {})}


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5, check=check)
