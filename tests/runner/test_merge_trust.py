"""`topoeval merge` trusts nothing it reads: unplanned records are left out in one line, busy inputs are
refused before anything is read or created, and the run's recorded prompts travel with the merge."""

import json
import subprocess
import sys
import warnings

import pytest

import topoeval
from topoeval.api import merge_runs
from topoeval.runner.prompts import PROMPTS_JSON, read_prompts
from topoeval.runner.shards import PromptsDiffer
from topoeval.runner.store import EPISODES, read_records

HOLD = ("import sys, time; from topoeval.runner.lock import lock_run; "
        "lock_run(sys.argv[1], 'run', shard=sys.argv[2]); print('held', flush=True); time.sleep(60)")


def _shards(tmp_path, proto, suites, n=2):
    dirs = []
    for i in range(1, n + 1):
        dirs.append(tmp_path / f"shard{i}")
        topoeval.run_protocol(proto, ["oracle"], dirs[-1], suites_dirs=[suites], shard=f"{i}/{n}")
    return dirs


def _append(path, records):
    with open(path, "a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in records))


def test_records_the_run_never_planned_are_left_out_in_one_line(tmp_path, echo_protocol, fixture_suites, cli):
    a, b = _shards(tmp_path, echo_protocol(n=2), fixture_suites)
    shard_file = next(a.glob("episodes.shard-*.jsonl"))
    genuine = next(iter(read_records(shard_file).values()))
    stranger = {**genuine, "model": "stranger", "key": "stranger|" + genuine["key"].split("|", 1)[1]}
    sneaky = {**genuine, "baseline": "../../evil", "key": "|".join(["oracle", "../../evil",
                                                                     *genuine["key"].split("|")[2:]])}
    _append(shard_file, [stranger, sneaky])
    proc = cli("merge", str(a), str(b), "--out", str(tmp_path / "m"))
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "plan.json" in line]
    assert said == [f"warning: {a}, {b}: left 2 record(s) out of the merge: their keys are not in the run's plan "
                    "(plan.json) nor of a model run.json names (records of another run, or edited by hand)"]
    merged = read_records(tmp_path / "m" / EPISODES)
    assert {r["model"] for r in merged.values()} == {"oracle"} and "../../evil" not in json.dumps(list(merged))
    summary = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert {c["model"] for c in summary["cells"]} == {"oracle"}


def test_a_merge_of_a_folder_still_being_written_is_refused_before_anything_is_made(tmp_path, echo_protocol,
                                                                                   fixture_suites, cli):
    a, b = _shards(tmp_path, echo_protocol(n=1), fixture_suites)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(b), "shard-2-of-2"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = cli("merge", str(a), str(b), "--out", str(tmp_path / "m"))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"error: cannot merge it: {b}: is being written by another topoeval (pid "
                                      f"{holder.pid} ")
        assert not (tmp_path / "m").exists()  # nothing created, not even a lock file
    finally:
        holder.kill()
        holder.wait()


def test_a_refused_merge_leaves_no_new_folder(tmp_path, echo_protocol, fixture_suites, cli):
    a, b = _shards(tmp_path, echo_protocol(n=1), fixture_suites)
    next(b.glob("episodes.shard-*.jsonl")).unlink()  # shard 2's episodes are missing: the merge is refused
    proc = cli("merge", str(a), str(b), "--out", str(tmp_path / "m"))
    assert proc.returncode == 1 and "planned episodes are missing" in proc.stderr
    assert not (tmp_path / "m").exists()


def test_the_merge_carries_the_runs_prompts_and_says_when_they_differ(tmp_path, echo_protocol, fixture_suites):
    a, b = _shards(tmp_path, echo_protocol(n=1), fixture_suites)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        merge_runs([a, b], tmp_path / "m")
    assert read_prompts(tmp_path / "m") == read_prompts(a) is not None
    recorded = json.loads((b / PROMPTS_JSON).read_text())
    name = sorted(recorded["topologies"])[0]
    recorded["topologies"][name]["system_prompt"] = "something else"
    (b / PROMPTS_JSON).write_text(json.dumps(recorded))
    with pytest.warns(PromptsDiffer, match=f"different prompts for 1 topology\\(ies\\): {name} \\({b} against {a}\\)"):
        merge_runs([a, b], tmp_path / "m2")
    assert read_prompts(tmp_path / "m2") == read_prompts(a)

