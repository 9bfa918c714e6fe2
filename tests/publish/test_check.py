"""A publish trusts nothing a run folder says: it checks every folder (idle, readable, valid) before it touches
the Hub, leaves out records and cells the run never planned in one line, and keeps every path a record's names
build inside its destination."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.core.parquet import read_rows
from topoeval.publish import publish
from topoeval.runner.shards import Unplanned
from topoeval.runner.store import EPISODES

from .hub_server import FakeHub

HOLD = ("import sys, time; from topoeval.runner.lock import lock_run; "
        "lock_run(sys.argv[1], 'run'); print('held', flush=True); time.sleep(60)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("results")
    return Path(topoeval.run_protocol("wiki_hops", ["oracle"], base / "r1", tasks=1, shots=[0]).run_dir)


def _copy(run, tmp_path, name="run"):
    dest = tmp_path / name
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns("*.lock", "cache.sqlite"))
    return dest


def _replace(folder, old, new):
    """Every mention of ``old`` in the run's JSON files renamed ``new`` (a crafted but consistent run)."""
    for name in ("run.json", "plan.json", "summary.json", EPISODES):
        path = folder / name
        path.write_text(path.read_text().replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))


def _files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize(("old", "new"), [
    ("oracle", "../../../model-escaped"),
    ("0-shot", "../../../baseline-escaped"),
    ("wiki_hops", "../../../protocol-escaped"),
    ("wiki-1-2hop", "../../../topology-escaped"),
])
def test_names_with_dot_dot_in_records_never_write_outside_out(run, tmp_path, old, new):
    crafted = _copy(run, tmp_path / "runs")
    _replace(crafted, old, new)
    before = _files(tmp_path)
    out = tmp_path / "stage" / "deep" / "out"
    done = publish([crafted], "org/board", dry_run=out, offline=True)
    outside = [f for f in _files(tmp_path) if f not in before and not f.startswith("stage/deep/out/")]
    assert outside == [] and [p.name for p in (tmp_path / "stage" / "deep").iterdir()] == ["out"]
    assert all(".." not in Path(f).parts for f in done["files"])
    rows = [r for f in done["files"] if f.startswith("episodes/") for r in read_rows(out / f)]
    assert rows and any(new in json.dumps(r) for r in rows)  # the name is published as it is, only the path is safe


def test_records_and_cells_the_run_never_planned_are_left_out_in_one_line(run, tmp_path):
    crafted = _copy(run, tmp_path)
    lines = (crafted / EPISODES).read_text().splitlines()
    genuine = json.loads(lines[0])
    stranger = {**genuine, "model": "stranger", "key": "stranger|" + genuine["key"].split("|", 1)[1]}
    (crafted / EPISODES).write_text("\n".join([*lines, json.dumps(stranger)]) + "\n")
    summary = json.loads((crafted / "summary.json").read_text())
    summary["cells"].append({**summary["cells"][0], "model": "stranger"})
    (crafted / "summary.json").write_text(json.dumps(summary))
    with pytest.warns(Unplanned) as said:
        done = publish([crafted], "org/board", dry_run=tmp_path / "out", offline=True)
    messages = sorted(str(w.message) for w in said)
    assert messages == [
        f"{crafted}: left 1 record(s) out of the publish: their keys are not in the run's plan (plan.json) nor of a "
        "model run.json names (records of another run, or edited by hand)",
        f"{crafted}: left 1 summary cell(s) out of the publish: their model, baseline and topology are not in the "
        "run's plan (plan.json)"]
    published = [r for f in done["files"] if f.endswith(".parquet") for r in read_rows(tmp_path / "out" / f)]
    assert published and "stranger" not in {r.get("model") for r in published}


def test_a_folder_being_written_is_refused_before_the_hub_is_touched(run, tmp_path):
    busy = _copy(run, tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(busy)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with FakeHub() as hub:
            with pytest.raises(UserError, match=f"cannot publish it: {busy}: is being written by another topoeval"):
                publish([run, busy], "org/board", endpoint=hub.url, retry_wait=0.01, private=True)
            assert hub.requests == [] and hub.repos == {}
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("damage", ["summary-list", "cell-mean-text", "run-json-symlink", "plan-garbage"])
def test_an_invalid_folder_is_one_line_before_the_hub_is_touched(run, tmp_path, damage):
    bad = _copy(run, tmp_path)
    if damage == "summary-list":
        (bad / "summary.json").write_text("[]")
    elif damage == "cell-mean-text":
        summary = json.loads((bad / "summary.json").read_text())
        summary["cells"][0]["metrics"]["success"]["mean"] = "high"
        (bad / "summary.json").write_text(json.dumps(summary))
    elif damage == "run-json-symlink":
        target = tmp_path / "elsewhere.json"
        shutil.move(bad / "run.json", target)
        (bad / "run.json").symlink_to(target)
    else:
        (bad / "plan.json").write_text('{"models": 3}')
    with FakeHub() as hub:
        with pytest.raises(UserError) as caught:
            publish([bad], "org/board", endpoint=hub.url, retry_wait=0.01)
        assert hub.requests == []
    assert "\n" not in str(caught.value) and str(bad) in str(caught.value)
