"""``topoeval publish``: runs as a Hugging Face Hub dataset (docs/publishing.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from topoeval.core.errors import UserError


def publish(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders to publish.")],
    repo: Annotated[str, typer.Option(help="Hub dataset repo, ORG/NAME.")],
    private: Annotated[bool, typer.Option(help="Make the repo private (an existing public one too).")] = False,
    dry_run: Annotated[bool, typer.Option(help="Write the folder that would be uploaded (into --out) "
                                               "instead.")] = False,
    out: Annotated[Path | None, typer.Option(help="With --dry-run: the folder to write.")] = None,
    offline: Annotated[bool, typer.Option(help="With --dry-run: do not read the repo's current results.")] = False,
    endpoint: Annotated[str | None, typer.Option(help="Hub endpoint (default: huggingface_hub's, "
                                                      "HF_ENDPOINT).")] = None,
    episodes: Annotated[bool, typer.Option(help="Include the per-episode config.")] = True,
    viewer: Annotated[bool, typer.Option(help="Also put the runs' static viewer in the repo's viewer/ folder "
                                              "(opens offline from the downloaded files; docs/viewer.md).")] = False,
) -> None:
    """Publish runs as a Hub dataset (results + latest + episodes + card), merging with the repo's rows."""
    from topoeval.publish import publish as do_publish
    from topoeval.publish.hub import WriteViewer

    write_viewer: WriteViewer | None = None
    if viewer:  # publish and view are sibling layers: the command hands the one's writer to the other
        from topoeval.view.export import export_runs

        write_viewer = export_runs

    if dry_run and out is None:  # `--dry-run DIR` (its old spelling) leaves DIR among the run folders
        last = run_dirs[-1] if len(run_dirs) > 1 and not (run_dirs[-1] / "run.json").exists() else "DIR"
        raise UserError(f"--dry-run is a flag; the folder it writes is --out (did you mean --dry-run --out {last}?)")
    if (offline or out is not None) and not dry_run:
        raise UserError("--out and --offline only go with --dry-run (an upload needs the Hub)")
    done = do_publish([str(d) for d in run_dirs], repo, private=private, dry_run=out, offline=offline,
                      endpoint=endpoint, episodes=episodes, viewer=write_viewer)
    where = f"wrote {done['folder']}" if not done["uploaded"] else f"uploaded to {repo} (commit {done['commit']})"
    typer.echo(f"{where}: {len(done['files'])} files, merged with {done['merged_rows']} existing result rows")
