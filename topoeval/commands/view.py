"""``topoeval view [RESULTS_DIR]``: look at runs in a browser (docs/viewer.md)."""

from __future__ import annotations

import time
import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from topoeval.core.errors import UserError


def view(
    results_dir: Annotated[Path, typer.Argument(help="A folder holding run folders (or one run folder).")] = Path(
        "results"),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")] = 0,
    browser: Annotated[bool, typer.Option(help="Open the page in the default browser.")] = True,
    export: Annotated[Path | None, typer.Option(help="Write the viewer as static files into this folder "
                                                     "instead of serving it.")] = None,
) -> None:
    """Serve a local viewer over every run under RESULTS_DIR: runs, pictures, episodes as conversations,
    filters, two models side by side (Ctrl-C stops it); --export DIR writes it as static files. The
    served viewer answers only its own page, which the printed URL's token opens."""
    from topoeval.view.index import find_runs

    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: no such folder (give a folder of runs, e.g. results/)")
    if not find_runs(results_dir):
        raise UserError(f"{results_dir}: no run folder under it (one holds run.json or summary.json and "
                        "episodes.jsonl)")
    if export is not None:
        from topoeval.view.export import export as write

        index = write(results_dir, export)
        for run in index["runs"]:
            if run["skipped"]:
                typer.echo(f"warning: {run['path']}: skipped {run['skipped']} line(s) of its episode files that "
                           "are not episode records", err=True)
        typer.echo(f"wrote {export}/index.html: {len(index['runs'])} run(s); open it in a browser, or host the folder")
        return
    from topoeval.view.server import Viewer

    with Viewer(results_dir, port) as viewer:
        typer.echo(f"topoeval view: {viewer.url} (runs under {results_dir}; the URL's token is the key: the "
                   "viewer answers no one without it); Ctrl-C stops it", err=True)
        if browser:
            webbrowser.open(viewer.url)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            typer.echo("stopped", err=True)
