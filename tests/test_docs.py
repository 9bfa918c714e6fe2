"""The docs cannot drift: every code block in README.md and docs/*.md marked runnable still runs.

Mark a fenced block by putting ``<!-- runnable -->`` on the line right above it (``<!-- runnable:
parse -->`` to only syntax-check it, for blocks that need an extra, a GPU or a long run):

- ``bash`` blocks run with ``bash -e`` from a fresh copy of the repository root (every entry linked,
  except ``runs/``, so a block's ``--out runs/...`` never meets an earlier run), the virtualenv's
  ``bin`` first on PATH;
- ``python`` blocks run as a script from that same fresh root;
- ``yaml`` blocks are loaded as a protocol (``topoeval.load_protocol``), so every key is validated.

Parse-only: ``bash -n``, ``compile()``, ``yaml.safe_load``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = re.compile(r"^<!--\s*runnable(?::\s*(parse))?\s*-->\s*$")
FENCE = re.compile(r"^```(\w+)?\s*$")


def runnable_blocks(path: Path) -> list[tuple[str, int, str, str]]:
    """(where, language, code, mode) of each block marked runnable in ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    for i, line in enumerate(lines):
        mark = MARK.match(line)
        if not mark or i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
            continue
        lang = FENCE.match(lines[i + 1]).group(1) or ""
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        code = "\n".join(lines[i + 2:end]) + "\n"
        blocks.append((f"{path.relative_to(ROOT)}:{i + 2}", lang, code, mark.group(1) or "run"))
    return blocks


def fresh_root(tmp_path: Path) -> Path:
    """A folder that looks like the repository root (its entries linked) but has no ``runs/``."""
    root = tmp_path / "repo"
    root.mkdir()
    for entry in ROOT.iterdir():
        if entry.name != "runs":
            (root / entry.name).symlink_to(entry)
    return root


BLOCKS = [b for doc in DOCS for b in runnable_blocks(doc)]


def test_the_docs_mark_blocks_runnable():
    assert len(BLOCKS) >= 5, "the docs should mark their examples runnable"
    for where, lang, _, _ in BLOCKS:
        assert lang in ("bash", "python", "yaml"), f"{where}: cannot run a ```{lang} block"


@pytest.mark.parametrize("where,lang,code,mode", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_runnable_block(where, lang, code, mode, tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if lang == "yaml":
        data = yaml.safe_load(code)
        if mode == "run":
            import topoeval

            path = tmp_path / f"{data.get('name', 'doc')}.yaml"
            path.write_text(code, encoding="utf-8")
            topoeval.load_protocol(path)
        return
    if mode == "parse":
        if lang == "python":
            compile(code, where, "exec")
        else:
            proc = subprocess.run(["bash", "-n"], input=code, text=True, capture_output=True)
            assert proc.returncode == 0, f"{where}: {proc.stderr}"
        return
    command = ["bash", "-e", "-c", code] if lang == "bash" else [sys.executable, "-c", code]
    proc = subprocess.run(command, cwd=fresh_root(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{where} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
