"""``topoeval view --export DIR``: the viewer as static files that open from disk or any web host.

The folder gets the page (``index.html``, ``app.js``, ``style.css``), ``data/runs.js``, per run
``data/<run>.js``, its episode chunks ``data/<run>/<k>.js`` and each cell's "what flipped" page
``data/<run>/flips/<cell>.js``, and ``files/<run>/*.png`` — the
server's paths, as scripts rather than JSON (a page opened from ``file://`` cannot fetch), which the
page loads only for a run id the runs list holds. ``index.json`` lists the runs for a machine (the Hub
card, a script): id, folder, protocol, models, episodes, and the data file; its
``"topoeval_view_export": 1`` marks the folder as an export.

Where it writes (:func:`check_out`): never into a run folder or under the folder being exported, and
never over files it did not write: DIR is new, empty, or an earlier export (its index.json holds the
marker), whose own files are then replaced (anything else in it is left alone).
"""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.safe_paths import read_regular
from topoeval.runner.store import EPISODES, RUN_JSON
from topoeval.view.data import Catalogue, as_script, data_path
from topoeval.view.server import STATIC, static_file

#: the key in index.json that marks a folder as written by ``view --export``
MARKER = "topoeval_view_export"
#: what an export writes at the top of its folder (replaced by the next export into it)
WRITTEN = (*STATIC, "index.json", "data", "files")


def _is_run_folder(folder: Path) -> bool:
    return any((folder / name).exists() or (folder / name).is_symlink()
               for name in (RUN_JSON, EPISODES)) or any(folder.glob("episodes.shard-*.jsonl"))


def _is_export(out: Path) -> bool:
    raw = read_regular(out / "index.json", 64 * 1024 * 1024)
    try:
        index = json.loads(raw) if raw is not None else None
    except ValueError:
        return False
    return isinstance(index, dict) and index.get(MARKER) == 1


def check_out(root: Path | Sequence[Path], out: Path) -> None:
    """Refuse (one line, UserError) an export folder that is a run folder or inside one, lies under the
    folder being exported (or under one of the run folders given), is not a folder, or holds files an
    export did not write."""
    where = Path(out).resolve()
    for folder in [Path(root)] if isinstance(root, (str, Path)) else [Path(d) for d in root]:
        runs = folder.resolve()
        if where == runs or runs in where.parents:
            raise UserError(f"{out}: inside {folder}, the folder being exported; write the export elsewhere")
    for folder in (where, *where.parents):
        if folder.is_dir() and _is_run_folder(folder):
            raise UserError(f"{out}: {'is' if folder == where else 'inside'} a run folder ({folder}); "
                            "write the export elsewhere")
    if where.exists() or where.is_symlink():
        if not where.is_dir():
            raise UserError(f"{out}: not a folder")
        if any(where.iterdir()) and not _is_export(where):
            raise UserError(f"{out}: holds files `topoeval view --export` did not write (no index.json with "
                            f'"{MARKER}": 1); give a new or empty folder')


def _clear(out: Path) -> None:
    """Remove what an earlier export wrote (a symlink is removed, never followed)."""
    for name in WRITTEN:
        path = out / name
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(mode):
            shutil.rmtree(path)
        else:
            path.unlink()


def export(root: Path, out: Path) -> dict[str, Any]:
    """Write the viewer of every run under ``root`` into ``out`` (checked by :func:`check_out` first);
    returns what index.json holds."""
    check_out(root, out)
    return _write(Catalogue(root), Path(out))


def export_runs(run_dirs: Sequence[Path], out: Path, label: str = "the dataset repo") -> dict[str, Any]:
    """Write the viewer of the run folders given into ``out`` (what ``topoeval publish --viewer`` puts in
    the dataset repo's ``viewer/``): each run shown by its shortest distinct trailing path, the runs
    list headed ``label`` (no absolute path of this machine is written). ``out`` is checked as
    :func:`export` checks it (never inside a run folder); returns what index.json holds."""
    check_out(run_dirs, out)
    return _write(Catalogue.of_runs(run_dirs, label), Path(out))


def _write(catalogue: Catalogue, out: Path) -> dict[str, Any]:
    """The export of ``catalogue``'s runs into ``out`` (already checked): what an earlier export wrote is
    replaced, the page, every payload as a script, the pictures, and index.json."""
    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    (out / "data").mkdir()
    for name in STATIC:
        page = static_file(name)
        if name == "index.html":  # the page loads its data as scripts (file:// cannot fetch)
            page = page.replace(b'data-source="json"', b'data-source="scripts"')
        (out / name).write_bytes(page)
    runs = catalogue.runs_payload()
    (out / data_path("runs")).write_bytes(as_script("runs", runs))
    skipped = {}
    for rid in catalogue.runs:
        payload = catalogue.run_payload(rid)
        skipped[rid] = payload["skipped"]
        (out / data_path(rid)).write_bytes(as_script(rid, payload))
        chunks = out / "data" / rid
        chunks.mkdir()
        for k in range((len(payload["episodes"]) + payload["chunk"] - 1) // payload["chunk"]):
            (out / data_path(rid, str(k))).write_bytes(as_script(f"{rid}/{k}", catalogue.chunk_payload(rid, k)))
        (chunks / "flips").mkdir()
        for cell in range(len(payload["cells"])):
            name = f"{rid}/flips/{cell}"
            (out / data_path(rid, "flips", str(cell))).write_bytes(as_script(name, catalogue.flips_payload(rid, cell)))
        pictures = out / "files" / rid
        pictures.mkdir(parents=True)
        for name in payload["pictures"]:
            body = catalogue.picture(rid, name)
            if body is not None:
                (pictures / name).write_bytes(body)
    index = {MARKER: 1, "viewer": "index.html",
             "runs": [{**r, "data": data_path(r["id"]), "skipped": skipped[r["id"]]} for r in runs["runs"]]}
    (out / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return index
