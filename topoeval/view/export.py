"""``topoeval view --export DIR``: the viewer as static files that open from disk or any web host.

The folder gets the page (``index.html``, ``app.js``, ``style.css``), ``data/runs.js``, per run
``data/<run>.js`` and its episode chunks ``data/<run>/<k>.js``, and ``files/<run>/*.png`` — the
same paths the server answers, so the page is one and the same. ``index.json`` lists the runs for
a machine (the Hub card, a script): id, folder, protocol, models, episodes, and the data file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from topoeval.view.data import Catalogue, as_script, data_path
from topoeval.view.server import STATIC, static_file


def export(root: Path, out: Path) -> dict[str, Any]:
    """Write the viewer of every run under ``root`` into ``out``; returns what index.json holds."""
    catalogue = Catalogue(root)
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    for name in STATIC:
        (out / name).write_bytes(static_file(name))
    runs = catalogue.runs_payload()
    (out / data_path("runs")).write_bytes(as_script("runs", runs))
    for rid in catalogue.runs:
        payload = catalogue.run_payload(rid)
        (out / data_path(rid)).write_bytes(as_script(rid, payload))
        chunks = out / "data" / rid
        chunks.mkdir(exist_ok=True)
        for k in range((len(payload["episodes"]) + payload["chunk"] - 1) // payload["chunk"]):
            (out / data_path(rid, str(k))).write_bytes(as_script(f"{rid}/{k}", catalogue.chunk_payload(rid, k)))
        pictures = out / "files" / rid
        pictures.mkdir(parents=True, exist_ok=True)
        for name in payload["pictures"]:
            shutil.copyfile(catalogue.runs[rid] / name, pictures / name)
    index = {"viewer": "index.html",
             "runs": [{**r, "data": data_path(r["id"])} for r in runs["runs"]]}
    (out / "index.json").write_text(json.dumps(index, indent=1), encoding="utf-8")
    return index
