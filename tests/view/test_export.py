"""``view --export DIR`` writes only where it may: never into a run folder or under the folder being
exported, never over files it did not write (an earlier export, marked by its index.json, is replaced);
it copies no PNG through a symlink, and a foreign line in one run costs that line only."""

import json
import os

import pytest

from tests.view.crafted import record, write_run
from topoeval.core.errors import UserError
from topoeval.view.export import MARKER, export, export_runs

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


@pytest.fixture
def root(tmp_path):
    results = tmp_path / "results"
    write_run(results / "r", [record()])
    return results


@pytest.mark.parametrize("where", ["results", "results/r", "results/r/site", "results/new"])
def test_the_export_refuses_to_write_into_a_run_folder_or_the_folder_exported(root, tmp_path, where):
    with pytest.raises(UserError, match="write the export elsewhere"):
        export(root, tmp_path / where)
    assert sorted(p.name for p in (root / "r").iterdir()) == ["episodes.jsonl", "run.json"]


def test_the_export_refuses_a_run_folder_outside_the_root(root, tmp_path):
    other = write_run(tmp_path / "elsewhere", [record()])
    with pytest.raises(UserError, match="is a run folder"):
        export(root, other)
    (tmp_path / "shard").mkdir()
    (tmp_path / "shard" / "episodes.shard-1-of-2.jsonl").write_text("")
    with pytest.raises(UserError, match="is a run folder"):
        export(root, tmp_path / "shard")


def test_the_export_never_writes_over_files_it_did_not_write(root, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("mine")
    with pytest.raises(UserError, match="did not write"):
        export(root, site)
    assert (site / "index.html").read_text() == "mine"
    (site / "index.json").write_text(json.dumps({"viewer": "index.html"}))  # an index.json, not ours
    with pytest.raises(UserError, match="did not write"):
        export(root, site)
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        export(root, file)


def test_an_earlier_export_is_replaced_and_other_files_are_kept(root, tmp_path):
    site = tmp_path / "site"
    index = export(root, site)
    assert index[MARKER] == 1 and json.loads((site / "index.json").read_text())[MARKER] == 1
    (site / "notes.txt").write_text("kept")
    (site / "data" / "stale.js").write_text("x")
    export(root, site)
    assert (site / "notes.txt").read_text() == "kept" and not (site / "data" / "stale.js").exists()
    assert (site / "index.html").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    export(root, empty)
    assert (empty / "index.html").is_file()


def test_a_symlinked_png_is_not_copied(root, tmp_path):
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"secret")
    os.chmod(secret, 0o600)
    (root / "r" / "link.png").symlink_to(secret)
    (root / "r" / "plot_ladder.png").write_bytes(PNG)
    site = tmp_path / "site"
    export(root, site)
    (rid,) = [p.name for p in (site / "files").iterdir()]
    assert sorted(p.name for p in (site / "files" / rid).iterdir()) == ["plot_ladder.png"]
    assert b"secret" not in (site / "data" / f"{rid}.js").read_bytes()


def test_a_run_with_foreign_lines_exports_with_the_others(root, tmp_path, cli):
    write_run(root / "foreign", [record(), record(sample=1)], extra_lines=[
        json.dumps({"key": "no-bars"}), json.dumps({**record(sample=2), "key": 7}),
        json.dumps(record(sample=3, scores=None)), json.dumps(record(sample=4, messages="x"))])
    site = tmp_path / "site"
    proc = cli("view", str(root), "--export", str(site))
    assert proc.returncode == 0 and "2 run(s)" in proc.stdout, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "warning: foreign: skipped 4 line(s) of its episode files that are not episode records"]
    runs = {r["path"]: r for r in json.loads((site / "index.json").read_text())["runs"]}
    assert runs["foreign"]["skipped"] == 4 and runs["r"]["skipped"] == 0
    body = (site / "data" / f"{runs['foreign']['id']}.js").read_text()
    payload = json.loads(body[body.index(",") + 1:-3])
    assert payload["skipped"] == 4 and [row[2] for row in payload["episodes"]] == [0, 1]


def test_a_refused_export_is_one_line(root, cli):
    proc = cli("view", str(root), "--export", str(root / "r"))
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: {root / 'r'}: inside {root}, the folder being exported; write the export elsewhere"]


def test_runs_given_one_by_one_export_under_their_short_names_and_no_path_of_this_machine(tmp_path):
    first = write_run(tmp_path / "runs" / "a" / "ref", [record()])
    second = write_run(tmp_path / "elsewhere" / "b" / "ref", [record(model="n")])
    alone = write_run(tmp_path / "runs" / "solo", [record()])
    site = tmp_path / "stage" / "viewer"
    index = export_runs([first, second, alone], site)
    assert [r["path"] for r in index["runs"]] == ["a/ref", "b/ref", "solo"] and index[MARKER] == 1
    runs = (site / "data" / "runs.js").read_text()
    assert '"root":"the dataset repo"' in runs
    written = [p for p in site.rglob("*") if p.is_file()]
    assert written and not [p for p in written if str(tmp_path).encode() in p.read_bytes()]
    for run in index["runs"]:
        assert (site / run["data"]).is_file() and (site / "data" / run["id"] / "flips" / "0.js").is_file()


def test_runs_given_one_by_one_are_never_written_into_and_must_be_run_folders(tmp_path):
    run = write_run(tmp_path / "runs" / "a", [record()])
    with pytest.raises(UserError, match="write the export elsewhere"):
        export_runs([run], run / "viewer")
    assert sorted(p.name for p in run.iterdir()) == ["episodes.jsonl", "run.json"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="empty: not a run folder the viewer can show"):
        export_runs([run, tmp_path / "empty"], tmp_path / "site")
    assert not (tmp_path / "site").exists()
