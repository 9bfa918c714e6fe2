"""topoeval publish --viewer: the static viewer of the published runs goes into the dataset repo's
``viewer/`` folder (topoeval.view.export.export_runs, written into the staging folder, never into a
run folder), uploaded in the same commit through the local Hub stand-in; downloaded back with
huggingface_hub, its index.html opens offline from file:// in headless Chromium, lists the runs and
opens one."""

import re
from pathlib import Path

import datasets
import pytest
from huggingface_hub import HfApi

import topoeval
from tests.view.test_viewer import browse, needs_chromium, text
from topoeval.publish import publish
from topoeval.view.export import export_runs

from .hub_server import FakeHub


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("viewer-runs")
    first = topoeval.run_protocol("wiki_hops", ["oracle", "noop"], base / "a" / "hops", tasks=2, shots=[0]).run_dir
    second = topoeval.run_protocol("wiki_hops", ["oracle"], base / "b" / "hops", tasks=3, shots=[0]).run_dir
    return Path(first), Path(second)


def test_a_dry_run_stages_the_viewer_beside_the_dataset(runs, tmp_path):
    out = tmp_path / "stage"
    done = publish(list(runs), "org/board", dry_run=out, offline=True, viewer=export_runs)
    viewer = [f for f in done["files"] if f.startswith("viewer/")]
    assert {"viewer/index.html", "viewer/app.js", "viewer/flips.js", "viewer/index.json",
            "viewer/data/runs.js"} <= set(viewer)
    assert sorted(viewer) == sorted(p.relative_to(out).as_posix() for p in (out / "viewer").rglob("*") if p.is_file())
    assert not any((run / "viewer").exists() for run in runs)  # nothing is written into a run folder
    runs_js = (out / "viewer" / "data" / "runs.js").read_text()
    assert '"path":"a/hops"' in runs_js and '"path":"b/hops"' in runs_js and str(tmp_path) not in runs_js
    card = (out / "README.md").read_text()
    assert "viewer/index.html" in card and "opens offline" in card
    assert datasets.load_dataset(str(out), "results", split="train").num_rows > 0  # the configs are unchanged
    # a dry run owns the viewer/ it wrote: the same folder is staged again
    again = publish(list(runs), "org/board", dry_run=out, offline=True, viewer=export_runs)
    assert sorted(again["files"]) == sorted(done["files"])


def test_without_viewer_nothing_is_staged_under_viewer(runs, tmp_path):
    out = tmp_path / "stage"
    done = publish([runs[0]], "org/board", dry_run=out, offline=True)
    assert not (out / "viewer").exists() and not [f for f in done["files"] if f.startswith("viewer/")]
    assert "viewer/" not in (out / "README.md").read_text()


def download(hub, repo, into):
    """Every file of the repo, downloaded with huggingface_hub as a user of the Hub would."""
    api = HfApi(endpoint=hub.url)
    for rel in sorted(hub.repos[repo]):
        api.hf_hub_download(repo, rel, repo_type="dataset", local_dir=str(into))
    return into


@needs_chromium
def test_the_published_viewer_opens_offline_from_the_downloaded_files(runs, tmp_path):
    with FakeHub() as hub:
        done = publish(list(runs), "org/board", endpoint=hub.url, retry_wait=0.01, viewer=export_runs)
        assert done["uploaded"] and len(hub.commits) == 1  # one commit: the dataset and its viewer
        assert "viewer/index.html" in hub.commits[0]["files"] and "data/results.parquet" in hub.commits[0]["files"]
        local = download(hub, "org/board", tmp_path / "board")
    page = (local / "viewer" / "index.html").as_uri()
    dom = browse(page, tmp_path, "publish-1-runs.png")
    assert "2 run(s) under the dataset repo" in text(dom)
    links = re.findall(r'<a href="\?run=(r[0-9a-f]{10})">([^<]*)</a>', dom)
    assert [name for _, name in links] == ["a/hops", "b/hops"]
    rid = links[0][0]
    run = browse(f"{page}?run={rid}", tmp_path, "publish-2-run.png", height=1400)
    assert "12 of 12 episodes shown" in text(run)  # 2 models x 3 topologies x 2 tasks
    cell = re.search(r'<option value="(\d+)">noop · 0-shot · (\w+)', run)
    flips = browse(f"{page}?run={rid}&flips={cell.group(1)}", tmp_path, "publish-3-what-flipped.png")
    assert "What flipped: noop → oracle" in text(flips) and "0 → 1: 2 solved by oracle" in text(flips)


def test_the_cli_flag_stages_the_viewer(runs, tmp_path, cli):
    out = tmp_path / "stage"
    proc = cli("publish", str(runs[0]), "--repo", "org/board", "--dry-run", "--out", str(out), "--offline", "--viewer")
    assert proc.returncode == 0 and f"wrote {out}" in proc.stdout, proc.stderr
    assert (out / "viewer" / "index.html").is_file() and (out / "viewer" / "index.json").is_file()


def test_the_viewer_does_not_go_with_no_episodes(runs, tmp_path, cli):
    """The viewer holds every conversation: with --no-episodes it would publish what the flag leaves out."""
    out = tmp_path / "stage"
    proc = cli("publish", str(runs[0]), "--repo", "org/board", "--dry-run", "--out", str(out), "--offline",
               "--viewer", "--no-episodes")
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: --viewer shows every episode's conversation, which --no-episodes leaves out: give one or the other"]
    assert not out.exists()
