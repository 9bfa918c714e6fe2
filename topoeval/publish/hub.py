"""Staging a publish folder and uploading it to a Hub dataset repo in one commit.

The token comes from huggingface_hub's usual sources (``HF_TOKEN``, ``huggingface-cli login``);
topoeval never reads, prints or writes it. Each Hub request that fails with a 5xx or a network
error is retried with exponential backoff (tenacity); a publish is idempotent (same files, one
commit), so a retried or re-run publish cannot duplicate rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from topoeval.core.errors import UserError
from topoeval.core.parquet import read_rows, write_rows
from topoeval.core.safe_paths import path_under
from topoeval.publish.card import render_card
from topoeval.publish.check import check_runs
from topoeval.publish.folder import check_out, write_folder
from topoeval.publish.schema import EPISODE_COLUMNS, MATRIX_COLUMNS, MATRIX_DEFAULTS, RESULT_COLUMNS, conform, features
from topoeval.publish.tables import (
    MATRIX_KEY,
    episode_rows,
    episodes_path,
    latest,
    load_run,
    matrix_rows,
    merge,
    result_rows,
    run_samples,
)

#: the folder of the repo that holds the static viewer of the runs (``publish --viewer``)
VIEWER_DIR = "viewer"
#: writes the static viewer of run folders into a folder: :func:`topoeval.view.export.export_runs`, handed
#: in by the caller (the command), as publish and view are sibling layers that do not import each other
WriteViewer = Callable[[list[Path], Path], Any]
RESULTS_FILE = "data/results.parquet"
LATEST_FILE = "data/latest.parquet"
MATRIX_FILE = "data/matrix.parquet"


def stage(run_dirs: Sequence[str | Path], out: str | Path, repo_id: str,
          existing: list[dict[str, Any]] | None = None, episodes: bool = True,
          existing_matrix: list[dict[str, Any]] | None = None, viewer: WriteViewer | None = None) -> list[str]:
    """Write the folder a publish uploads: results merged into ``existing``, the latest view,
    the transfer matrices (transfer-matrix runs, merged into ``existing_matrix``), the runs'
    episodes (unless ``episodes=False``), the static viewer of the runs in ``viewer/`` when
    ``viewer`` writes one (:func:`topoeval.view.export.export_runs`: it opens offline from the
    downloaded files), and the card. Returns the repo paths written.
    Every file is written from its config's declared schema (:mod:`topoeval.publish.schema`)."""
    out = Path(out)
    new = conform([row for d in run_dirs for row in result_rows(d)], RESULT_COLUMNS)
    if not new:
        raise UserError("nothing to publish: the runs have no cells")
    rows = merge(conform(existing or [], RESULT_COLUMNS), new)
    result_features = features(RESULT_COLUMNS)
    write_rows(rows, out / RESULTS_FILE, result_features)
    write_rows(latest(rows), out / LATEST_FILE, result_features)
    written = [RESULTS_FILE, LATEST_FILE]
    matrix = merge(conform(existing_matrix or [], MATRIX_COLUMNS, MATRIX_DEFAULTS),
                   conform([row for d in run_dirs for row in matrix_rows(d)], MATRIX_COLUMNS, MATRIX_DEFAULTS),
                   MATRIX_KEY)
    if matrix:
        write_rows(matrix, out / MATRIX_FILE, features(MATRIX_COLUMNS))
        written.append(MATRIX_FILE)
    episode_features = features(EPISODE_COLUMNS)
    for d in run_dirs if episodes else []:
        groups: dict[str, list[dict[str, Any]]] = {}
        meta, summary = load_run(d)
        samples = run_samples(meta)
        for row in conform(episode_rows(d, summary), EPISODE_COLUMNS):
            path = episodes_path(row["protocol"], row["model"], row["baseline"], row["task_set_sha256"], samples)
            groups.setdefault(path, []).append(row)
        for rel, ep_rows in sorted(groups.items()):
            write_rows(sorted(ep_rows, key=lambda r: (r["topology"], r["task_id"], r["sample"])), path_under(out, rel),
                       episode_features)
            written.append(rel)
    if viewer is not None:
        viewer([Path(d) for d in run_dirs], out / VIEWER_DIR)
        written += sorted(p.relative_to(out).as_posix() for p in (out / VIEWER_DIR).rglob("*") if p.is_file())
    (out / "README.md").write_text(render_card(rows, repo_id, episodes, matrix, viewer=viewer is not None),
                                   encoding="utf-8")
    written.append("README.md")
    return written


def _transient(exc: BaseException) -> bool:
    from huggingface_hub.errors import HfHubHTTPError

    if isinstance(exc, HfHubHTTPError):
        status = getattr(exc.response, "status_code", None)
        return status is not None and status >= 500
    return isinstance(exc, (ConnectionError, TimeoutError)) or type(exc).__name__ in ("ConnectError", "ReadTimeout")


def _retrying(fn, wait: float, attempts: int = 5):
    return retry(retry=retry_if_exception(_transient), stop=stop_after_attempt(attempts),
                 wait=wait_exponential(multiplier=wait, max=30 * wait), reraise=True)(fn)


def fetch_existing(api: Any, repo_id: str, workdir: Path, wait: float, path: str = RESULTS_FILE,
                   ) -> list[dict[str, Any]]:
    """The repo's current rows of ``path`` (results; [] for a new repo or one without that file yet)."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    def download() -> str:
        return api.hf_hub_download(repo_id, path, repo_type="dataset", cache_dir=str(workdir / "cache"))

    try:
        return read_rows(_retrying(download, wait)())
    except (EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError):
        return []
    except HfHubHTTPError as exc:
        if getattr(exc.response, "status_code", None) == 404:
            return []
        raise


def make_private(api: Any, repo_id: str, wait: float) -> None:
    """Set ``repo_id`` private (it may exist already, public); a refusal is one line, before any upload."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        _retrying(lambda: api.update_repo_settings(repo_id, private=True, repo_type="dataset"), wait)()
    except HfHubHTTPError as exc:
        status = getattr(exc.response, "status_code", None)
        raise UserError(f"--private: could not make {repo_id} private (HTTP {status}: "
                        f"{' '.join(str(exc).split())[:200]}); nothing was uploaded") from None


def publish(run_dirs: list[str | Path], repo_id: str, *, private: bool = False, dry_run: str | Path | None = None,
            offline: bool = False, endpoint: str | None = None, retry_wait: float = 1.0,
            episodes: bool = True, viewer: WriteViewer | None = None) -> dict[str, Any]:
    """Publish runs to ``repo_id`` (a dataset repo), merging with what it holds.

    ``private``: the repo is made private, also when it exists already (public).
    ``dry_run``: write the folder that would be uploaded there instead of uploading (the repo's
    current results are still read, unless ``offline``). ``viewer`` (``topoeval.view.export.export_runs``):
    the runs' static viewer goes into the repo's ``viewer/`` too (:func:`stage`). Returns what was done.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    if "/" not in repo_id:
        raise UserError(f"repo takes ORG/NAME, not '{repo_id}'")
    if viewer is not None and not episodes:
        raise UserError("--viewer shows every episode's conversation, which --no-episodes leaves out: give one or "
                        "the other")
    if dry_run is not None:
        check_out(Path(dry_run), run_dirs)  # before any request: a refused folder costs nothing
    check_runs(run_dirs)  # every folder idle, readable and valid before the repo is created or changed
    api = HfApi(endpoint=endpoint)
    with tempfile.TemporaryDirectory(prefix="topoeval-publish-") as tmp:
        work = Path(tmp)
        if dry_run is None:
            _retrying(lambda: api.create_repo(repo_id, repo_type="dataset", private=private or None, exist_ok=True),
                      retry_wait)()
            if private:  # create_repo leaves an existing repo's visibility as it is
                make_private(api, repo_id, retry_wait)
        existing = [] if offline else fetch_existing(api, repo_id, work, retry_wait)
        existing_matrix = [] if offline else fetch_existing(api, repo_id, work, retry_wait, MATRIX_FILE)
        staged = Path(dry_run) if dry_run is not None else work / "stage"
        if dry_run is not None:  # never deletes what it did not write (topoeval.publish.folder)
            files = write_folder(staged, run_dirs, lambda into: stage(run_dirs, into, repo_id, existing,
                                                                      episodes=episodes,
                                                                      existing_matrix=existing_matrix,
                                                                      viewer=viewer))
        else:
            files = stage(run_dirs, staged, repo_id, existing, episodes=episodes, existing_matrix=existing_matrix,
                          viewer=viewer)
        result = {"repo": repo_id, "files": files, "merged_rows": len(existing), "folder": str(staged)}
        if dry_run is not None:
            return {**result, "uploaded": False}
        ops = [CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(staged / rel)) for rel in files]
        message = f"topoeval: publish {len(run_dirs)} run(s)"
        info = _retrying(lambda: api.create_commit(repo_id, operations=ops, commit_message=message,
                                                  repo_type="dataset"), retry_wait)()
        return {**result, "uploaded": True, "commit": getattr(info, "oid", None), "folder": None}
