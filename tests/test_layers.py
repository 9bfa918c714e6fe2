"""The layering rule: imports point one way, down the flow (docs/architecture.md), and no cycle.

The layer contract lives in pyproject.toml (``[tool.importlinter]``) and is checked by import-linter;
cycles are checked on the same import graph (grimp, which import-linter builds on), counting imports
inside functions too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: import-linter's command, installed by the test extra beside this interpreter
LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")


def test_layer_contract_holds():
    out = subprocess.run([LINT_IMPORTS, str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 kept, 0 broken" in out.stdout


def test_no_import_cycle_in_the_package():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("topoeval", cache_dir=None, exclude_type_checking_imports=True)
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != module and graph.chain_exists(importer=imported, imported=module):
                cycles.append((module, imported))
    # a package __init__ and its submodules are one unit (a lazy re-export is not a cycle of code)
    cycles = [(a, b) for a, b in cycles if not (a.startswith(b + ".") or b.startswith(a + "."))]
    assert not cycles, f"import cycles: {cycles[:10]}"


def test_a_lower_layer_importing_a_higher_one_is_caught(tmp_path):
    """The contract is live: a runner module that imports the report layer breaks it."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "topoeval", copy / "topoeval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    bad = copy / "topoeval" / "runner" / "store.py"
    bad.write_text(bad.read_text() + "\nfrom topoeval.report import tables  # noqa\n")
    out = subprocess.run([LINT_IMPORTS, str(copy / "pyproject.toml")],
                         cwd=copy, capture_output=True, text=True, env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert out.returncode != 0
    assert "topoeval.runner.store -> topoeval.report" in out.stdout
