"""The folder a ``publish --dry-run --out DIR`` writes, without ever deleting what topoeval did not write.

The files are staged into a fresh temporary folder beside DIR and moved into place (one rename), so
DIR holds either the previous staging or the new one, never half of each. DIR must be

- new, or an empty folder, or a staging folder an earlier dry run wrote: it holds :data:`MARKER`
  (the list of files that run wrote) and nothing else than those files. Anything else — a run
  folder, ``results/``, the current folder — is refused in one line, and nothing is touched;
- neither a run folder being published, nor inside one, nor a folder that holds one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from topoeval.core.errors import UserError

#: The file that marks a folder as a topoeval staging folder (it lists the files it wrote).
MARKER = ".topoeval-publish.json"


def _within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def _previous_files(out: Path) -> list[str] | None:
    """The files an earlier staging wrote into ``out`` (None: ``out`` is not such a folder)."""
    try:
        listed = json.loads((out / MARKER).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(listed, list) or not all(isinstance(f, str) for f in listed):
        return None
    return listed


def check_out(out: Path, run_dirs: Sequence[str | Path]) -> None:
    """Refuse (one line) a ``--out`` folder whose content a dry run would replace without owning it."""
    where = out.resolve()
    for run in run_dirs:
        run_path = Path(run).resolve()
        if _within(where, run_path) or _within(run_path, where):
            relation = "is" if where == run_path else ("is inside" if _within(where, run_path) else "holds")
            raise UserError(f"--out {out} {relation} the run folder {run}: give a new folder outside the runs, "
                            "e.g. --out publish-preview")
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir() or out.is_symlink():
        raise UserError(f"--out {out} exists and is not a folder: give a new folder")
    present = sorted(str(p.relative_to(out)) for p in out.rglob("*") if not p.is_dir())
    if not present and not any(out.iterdir()):
        return  # an empty folder
    listed = _previous_files(out)
    if listed is None:
        raise UserError(f"--out {out} is a folder that topoeval did not write (no {MARKER} in it) and is not empty: "
                        "give a new or empty folder (nothing was changed)")
    foreign = [p for p in present if p not in {*listed, MARKER}]
    if foreign:
        raise UserError(f"--out {out} holds files an earlier dry run did not write ({foreign[0]}"
                        + (f" and {len(foreign) - 1} more" if len(foreign) > 1 else "")
                        + "): move them away or give another folder (nothing was changed)")


def write_folder(out: Path, run_dirs: Sequence[str | Path], write: Callable[[Path], list[str]]) -> list[str]:
    """``write(folder)`` into a fresh folder beside ``out``, then that folder moved to ``out``
    (after :func:`check_out`). Returns what ``write`` returned (the files it wrote)."""
    check_out(out, run_dirs)
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=out.parent, prefix=".topoeval-publish-"))
    old: Path | None = None
    try:
        files = write(fresh)
        (fresh / MARKER).write_text(json.dumps({"files": files}, indent=1) + "\n", encoding="utf-8")
        if out.exists() and any(out.iterdir()):  # an earlier staging (check_out made sure): set aside
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=".topoeval-publish-old-"))
            os.replace(out, old / "stage")
        elif out.exists():
            out.rmdir()  # empty
        os.replace(fresh, out)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        if old is not None and not out.exists():
            os.replace(old / "stage", out)  # put the earlier staging back
            old.rmdir()
        raise
    if old is not None:
        shutil.rmtree(old)  # only files an earlier dry run wrote (check_out made sure)
    return files
