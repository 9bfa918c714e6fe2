"""--shard i/n and topoeval merge: the split, partial summaries, and a merged run byte-identical to
an unsharded one; missing shards, conflicting duplicates and folders of different runs refused."""

import json
from collections import Counter

import pytest

import topoeval
from tests.runner.episode_records import episode, key_of
from topoeval.api import merge_runs
from topoeval.core.errors import UserError
from topoeval.runner.shards import MissingEpisodes, Shard, merge_files, read_plan, shard_of
from topoeval.runner.store import read_records

# the reference policies over a shipped protocol with a ladder, two baselines and two samples
PROTOCOL = "wiki_to_travel_ladder"
MODELS = ["oracle", "noop", "random", "oracle-serial"]
OPTIONS = dict(tasks=2, samples=2, shots=[0, 1])
PLANNED = 4 * 2 * 6 * 2 * 2  # models x baselines x topologies (OOD, ID, the ladder's steps) x tasks x samples


def _run(out, **kw):
    return topoeval.run_protocol(PROTOCOL, MODELS, out, **OPTIONS, **kw)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    _run(base / "whole" / "run")
    for n in (1, 3):
        for i in range(1, n + 1):
            _run(base / f"n{n}" / "run", shard=f"{i}/{n}")
        merge_runs([base / f"n{n}" / "run"])
    for i in (1, 2, 3):  # each shard in a folder of its own, merged into a new one
        _run(base / "apart" / f"shard{i}", shard=f"{i}/3")
    merge_runs([base / "apart" / f"shard{i}" for i in (1, 2, 3)], base / "apart" / "run")
    return base


def test_shard_numbers_are_checked():
    assert Shard.parse("2/3") == Shard(index=2, count=3)
    for bad in ("0/3", "4/3", "3", "a/b", "1/0"):
        with pytest.raises(UserError, match="^shard"):
            Shard.parse(bad)


def test_the_owner_of_a_key_depends_only_on_the_key_and_n():
    keys = [f"m|0-shot|t|task-{i}|0" for i in range(300)]
    assert shard_of("oracle|0-shot|wiki|wiki/test/0|0", 7) == shard_of("oracle|0-shot|wiki|wiki/test/0|0", 7)
    for n in (1, 2, 3, 5):
        owners = [[s for s in range(1, n + 1) if Shard(index=s, count=n).owns(k)] for k in keys]
        assert all(len(o) == 1 for o in owners)  # each key in exactly one shard
        counts = Counter(o[0] for o in owners)
        assert len(counts) == n and min(counts.values()) > 300 / n / 2  # roughly even


@pytest.mark.slow
def test_merged_summary_is_byte_identical_to_an_unsharded_run(runs):
    whole = (runs / "whole" / "run" / "summary.json").read_bytes()
    for merged in ("n1", "n3", "apart"):
        assert (runs / merged / "run" / "summary.json").read_bytes() == whole, merged
    for name in ("report.md", "report.html"):
        assert (runs / "n3" / "run" / name).exists()


def test_each_shard_wrote_only_its_own_keys(runs):
    plan = read_plan(runs / "n3" / "run")
    topologies = {cell[2] for cell in plan.order}
    assert len(topologies) >= 4 and len(plan.keys) == len(MODELS) * 2 * len(topologies) * 2 * 2 == PLANNED
    seen = []
    for i in (1, 2, 3):
        keys = list(read_records(runs / "n3" / "run" / f"episodes.shard-{i}-of-3.jsonl"))
        assert keys and all(shard_of(k, 3) == i for k in keys)
        seen += keys
    assert sorted(seen) == sorted(plan.keys)


def test_a_shard_summary_is_partial_and_says_so(runs):
    part = json.loads((runs / "apart" / "shard2" / "summary.shard-2-of-3.json").read_text())
    owned = sum(1 for k in read_plan(runs / "apart" / "shard2").keys if shard_of(k, 3) == 2)
    assert part["partial"]["shard"] == "2/3"
    assert part["partial"]["episodes"] == part["partial"]["planned"] == owned
    assert part["partial"]["planned_total"] == PLANNED
    assert sum(c["n_episodes"] for c in part["cells"]) == owned
    assert not (runs / "apart" / "shard2" / "summary.json").exists()  # no run summary before the merge


def test_a_shard_resumes_by_key(runs):
    again = _run(runs / "apart" / "shard1", shard="1/3")
    assert again.new_episodes == 0 and again.reused_episodes > 0


def test_a_missing_shard_is_listed_and_exits_1(runs, tmp_path, cli):
    for i in (1, 3):
        _run(tmp_path / "run", shard=f"{i}/3")
    with pytest.raises(MissingEpisodes) as info:
        merge_runs([tmp_path / "run"])
    owned = sum(1 for k in read_plan(tmp_path / "run").keys if shard_of(k, 3) == 2)
    assert len(info.value.missing) == owned and info.value.by_shard == {"2/3": owned}
    proc = cli("merge", str(tmp_path / "run"))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"error: {owned} of {PLANNED} planned episodes are missing (shard 2/3: {owned})")
    assert "Traceback" not in proc.stderr and lines[1].startswith("  missing: ")
    assert not (tmp_path / "run" / "summary.json").exists()


def test_equal_duplicates_fold_into_one_episode(runs, tmp_path):
    # shard 1 exists twice (its own folder and the n3 folder): the same results, merged once
    res = merge_runs([runs / "n3" / "run", runs / "apart" / "shard1"], tmp_path / "run")
    assert (tmp_path / "run" / "summary.json").read_bytes() == (runs / "whole" / "run" / "summary.json").read_bytes()
    assert res.reused_episodes == PLANNED


def test_a_conflicting_duplicate_names_the_key(runs, tmp_path, cli):
    src = runs / "apart" / "shard1" / "episodes.shard-1-of-3.jsonl"
    record = json.loads(src.read_text().splitlines()[0])
    record["final_answer"] = "something else"
    record["scores"]["success"] = 1.0 - record["scores"]["success"]
    other = tmp_path / "copy"
    other.mkdir()
    for name in ("run.json", "plan.json"):
        (other / name).write_bytes((runs / "apart" / "shard1" / name).read_bytes())
    (other / "episodes.shard-1-of-3.jsonl").write_text(json.dumps(record) + "\n")
    proc = cli("merge", str(runs / "n3" / "run"), str(other), "--out", str(tmp_path / "m"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"error: episode {record['key']} has two different results "
                                   f"({runs / 'n3' / 'run' / 'episodes.jsonl'} and "  # the merged file comes first
                                   f"{other / 'episodes.shard-1-of-3.jsonl'}); remove one of them, then merge again")


def test_a_finished_record_replaces_an_errored_one(tmp_path):
    ok = episode("k", wall_s=1.0)
    err = episode("k", "error", errors=["policy: boom"])
    other = episode("k", wall_s=2.5)  # timing differs only
    files = []
    for i, rec in enumerate([err, ok, other]):
        files.append(tmp_path / f"episodes.shard-{i + 1}-of-3.jsonl")
        files[-1].write_text(json.dumps(rec) + "\n")
    records, duplicates = merge_files(files)
    assert records[key_of("k")] == ok and duplicates == 2


def test_folders_of_different_runs_are_refused(runs, tmp_path, cli):
    topoeval.run_protocol(PROTOCOL, MODELS, tmp_path / "other", tasks=3, samples=2, shots=[0, 1], shard="1/3")
    proc = cli("merge", str(runs / "apart" / "shard2"), str(tmp_path / "other"), "--out", str(tmp_path / "m"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "different task sets" in proc.stderr
    topoeval.run_protocol(PROTOCOL, ["oracle"], tmp_path / "fewer", **OPTIONS, shard="1/3")
    with pytest.raises(UserError, match="plan different episodes"):
        merge_runs([runs / "apart" / "shard2", tmp_path / "fewer"], tmp_path / "m")
    with pytest.raises(UserError, match="needs out"):
        merge_runs([runs / "apart" / "shard1", runs / "apart" / "shard2"])


def test_shard_and_workers_do_not_mix(tmp_path):
    with pytest.raises(UserError, match="give shard or workers"):
        _run(tmp_path / "run", shard="1/2", workers=2)


def test_a_refused_merge_leaves_the_folder_s_episode_file_as_it_was(runs, tmp_path):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(runs / "n1" / "run", folder)
    episodes = folder / "episodes.jsonl"
    episodes.write_bytes(episodes.read_bytes() + b'{"key": "torn')  # a torn tail: the writer would cut it
    before = episodes.read_bytes()
    topoeval.run_protocol(PROTOCOL, ["oracle"], tmp_path / "fewer", **OPTIONS)
    with pytest.raises(UserError, match="plan different episodes"):
        merge_runs([folder, tmp_path / "fewer"], folder)
    assert episodes.read_bytes() == before
    with pytest.warns(UserWarning, match="damaged"):  # merged in place: repaired, then read back
        result = merge_runs([folder])
    assert result.reused_episodes == PLANNED and not episodes.read_bytes().endswith(b'{"key": "torn')
