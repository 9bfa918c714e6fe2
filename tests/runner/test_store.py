"""The episode store: readers never write, any tail damage is read past with one line, the writer
repairs under its lock with a unique scratch file and fsync, and every run file is written atomically."""

import json
import os
import warnings
from pathlib import Path

import pytest

import topoeval
import topoeval.api
from tests.runner.episode_records import episode, key_of
from topoeval.runner.store import EPISODES, EpisodeStore, StoreWarning, finished_keys, read_episodes, read_records


def _run(out, proto, suites, models=("oracle",)):
    return topoeval.run_protocol(proto, list(models), out, suites_dirs=[suites])


def _lines(path: Path) -> list[dict]:
    return [json.loads(raw) for raw in path.read_bytes().split(b"\n") if raw.strip()]


def _snapshot(path: Path) -> tuple[int, bytes]:
    return path.stat().st_ino, path.read_bytes()


def _torn_utf8(path: Path) -> None:
    """The last record cut in the middle of a two-byte character (a full disk or a power cut mid-write)."""
    raw = path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)
    last = json.loads(raw[1])
    last["final_answer"] = "é" * 40
    data = json.dumps(last, ensure_ascii=False).encode()
    cut = data.index("é".encode()) + 1  # the first byte of "é" only
    path.write_bytes(raw[0] + b"\n" + data[:cut])


def test_a_torn_utf8_tail_is_read_past_in_one_line_and_runs_again(tmp_path, echo_protocol, fixture_suites, cli):
    out, proto = tmp_path / "run", echo_protocol(n=3)
    _run(out, proto, fixture_suites)
    path = out / EPISODES
    _torn_utf8(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(read_episodes(out)) == 5 and len(finished_keys(out)) == 5
    message = [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]
    assert message and "\n" not in message[0]
    assert f"{path}: skipped 1 damaged line(s): line 6 (" in message[0] and "bytes: not UTF-8" in message[0]
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert report.stderr == f"warning: {message[0]}\n"  # the CLI says it in one line
    res = _run(out, proto, fixture_suites)  # resume, then the summary and reports read the same file
    assert res.new_episodes == 1 and res.reused_episodes == 5
    assert len({r["key"] for r in _lines(path)}) == 6 == len(_lines(path))
    merged = topoeval.api.merge_runs([out])
    assert merged.cells and not merged.errors


def test_a_last_line_without_its_newline_is_not_glued_to_the_next_record(tmp_path, echo_protocol, fixture_suites):
    out, proto = tmp_path / "run", echo_protocol(n=3)
    _run(out, proto, fixture_suites)
    path = out / EPISODES
    kept = path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[0]  # drop the last episode, and the newline before it
    path.write_bytes(kept)
    res = _run(out, proto, fixture_suites)
    assert res.new_episodes == 1
    records = _lines(path)  # every line is one whole record
    assert len(records) == 6 == len({r["key"] for r in records})


def _load(proto, suites):
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.protocol.loader import load_protocol

    return load_protocol(proto, SuiteRegistry([suites]))


def test_readers_never_rewrite_a_damaged_store(tmp_path, echo_protocol, fixture_suites):
    from topoeval.publish.tables import episode_rows
    from topoeval.training.sft_data import run_conversations

    out, proto = tmp_path / "run", echo_protocol(n=3)
    _run(out, proto, fixture_suites)
    path = out / EPISODES
    _torn_utf8(path)
    before = _snapshot(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreWarning)
        read_episodes(out)
        finished_keys(out)
        read_records(path)
        assert len(episode_rows(out)) == 5  # what publish reads
        # export --from-run: no crash on the torn line
        conversations = run_conversations(out, [fixture_suites], protocol=_load(proto, fixture_suites))
        topoeval.api.compare_runs([out])
    assert conversations.sources[f"run:{out.name}"]["episodes"] == 5
    assert _snapshot(path) == before


def test_a_reader_cannot_lose_a_running_writers_episodes(tmp_path, echo_protocol, fixture_suites):
    """The writer keeps its file open; a reader meeting a damaged line must not swap the file under it."""
    from topoeval.publish.tables import episode_rows

    out, proto = tmp_path / "run", echo_protocol(n=2)
    _run(out, proto, fixture_suites)
    path = out / EPISODES
    first = _lines(path)[0]
    store = EpisodeStore(out)  # the running writer
    try:
        with open(path, "ab") as fh:
            fh.write(b'{"key": "torn\n')  # damage in the file while it runs (a torn line of another writer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StoreWarning)
            episode_rows(out)  # `topoeval publish` of the folder meanwhile
            store.append(after := {**first, "sample": 7, "key": first["key"].rsplit("|", 1)[0] + "|7"})
    finally:
        store.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreWarning)
        assert after["key"] in read_records(path)


def test_the_writer_repairs_damage_in_place_with_a_unique_scratch_file_and_fsync(tmp_path, monkeypatch):
    path = tmp_path / EPISODES
    path.write_bytes(json.dumps(episode("a")).encode() + b"\n" + b'{"key": "b", "stat\xc3\n'
                     + json.dumps(episode("c")).encode())
    synced, replaced = [], []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append((Path(a).name, Path(b).name)), real_replace(a, b)))
    with pytest.warns(StoreWarning, match=r"line 2 \(\d+ bytes"):
        store = EpisodeStore(tmp_path)
    store.append(episode("d"))
    store.close()
    assert [r["key"] for r in _lines(path)] == [key_of(k) for k in "acd"]
    (src, dst), = replaced
    assert dst == EPISODES and src != f"{EPISODES}.tmp" and str(os.getpid()) in src  # not a fixed scratch name
    assert str(tmp_path) in synced and any(s.endswith(src) or s.endswith(EPISODES) for s in synced)  # folder and file
    assert [p.name for p in tmp_path.iterdir()] == [EPISODES]  # no scratch file left


def test_a_cut_tail_is_truncated_by_the_writer_only(tmp_path):
    path = tmp_path / EPISODES
    good = json.dumps(episode("a")).encode() + b"\n"
    path.write_bytes(good + b'{"key": "b", "status": "do')
    with pytest.warns(StoreWarning, match="not complete JSON"):
        assert list(read_records(path)) == [key_of("a")]
    assert path.read_bytes().endswith(b'"do')  # the reader left it
    with pytest.warns(StoreWarning):
        EpisodeStore(tmp_path).close()
    assert path.read_bytes() == good


def test_a_file_rewritten_behind_the_store_is_an_error_not_another_keys_record(tmp_path):
    """The store reads records back by offset: if another process rewrote the file since (the same lengths,
    another order), a read names the change instead of returning the other key's record as this one's."""
    from topoeval.core.errors import UserError
    from topoeval.runner.store import PlannedRecords

    a, b = (episode(k) for k in ("k1", "k2"))
    path = tmp_path / EPISODES
    path.write_text("".join(json.dumps(r) + "\n" for r in (a, b)))
    store = EpisodeStore(tmp_path)
    try:
        path.write_text("".join(json.dumps(r) + "\n" for r in (b, a)))
        with pytest.raises(UserError, match="changed while it was read"):
            store.get(key_of("k1"))
        with pytest.raises(UserError, match="changed while it was read"):
            list(PlannedRecords(store))
    finally:
        store.close()


def test_every_file_a_run_writes_is_written_atomically(tmp_path, echo_protocol, fixture_suites, monkeypatch):
    replaced: dict[str, str] = {}
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.__setitem__(Path(b).name, Path(a).name),
                                                     real_replace(a, b)))
    out = tmp_path / "run"
    _run(out, echo_protocol(n=2), fixture_suites, models=("oracle", "noop"))
    written = {p.name for p in out.iterdir() if p.name not in (EPISODES,) and not p.name.endswith(".lock")}
    assert {"run.json", "plan.json", "summary.json", "report.md", "report.html"} <= written
    assert any(name.endswith(".png") for name in written)
    assert written <= set(replaced), f"written in place: {sorted(written - set(replaced))}"
    assert all(str(os.getpid()) in scratch for scratch in replaced.values())
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no scratch file left behind


def test_the_store_keeps_offsets_and_reads_records_back_from_the_file(tmp_path, echo_protocol, fixture_suites):
    """Memory flat in the number of episodes: the store holds where each record is, not the record."""
    from topoeval.runner.plan_index import PlanIndex
    from topoeval.runner.shards import in_plan_order
    from topoeval.runner.store import PlannedRecords

    out = tmp_path / "run"
    _run(out, echo_protocol(n=3, samples=2), fixture_suites, models=("oracle", "noop"))
    records = read_records(out / EPISODES)
    plan_keys = json.loads((out / "plan.json").read_text())["keys"]
    ids: dict[str, list[str]] = {}
    for key in plan_keys:
        _, _, topo, task, _ = key.split("|")
        if task not in ids.setdefault(topo, []):
            ids[topo].append(task)
    plan = PlanIndex(["noop", "oracle"], ["0-shot"], ids, sorted(ids), 2)  # another order than the run's
    store = EpisodeStore(out, plan=plan)
    try:
        assert not store._extra and all(isinstance(code, int) for code in store._slots)
        assert list(PlannedRecords(store)) == in_plan_order(records, plan.keys())
        # the summary trusts a run's own stream to be in plan order (keeps no task ids) and gets the list's cells
        from topoeval.analysis.summary import build_cells

        assert build_cells(PlannedRecords(store)) == build_cells(list(records.values()))
        assert len(PlannedRecords(store, owns=lambda k: k.startswith("oracle|"))) == 12
        # a record is read from the file when asked: change it on disk (same length) and the store sees it
        key = plan.key(0)
        raw = (out / EPISODES).read_bytes()
        line = json.dumps(records[key], ensure_ascii=False).encode()
        assert line in raw and b'"status": "done"' in line
        (out / EPISODES).write_bytes(raw.replace(line, line.replace(b'"status": "done"', b'"status": "DONE"')))
        assert store.get(key)["status"] == "DONE" and store.records[key]["status"] == "DONE"
    finally:
        store.close()


def test_the_writer_refuses_a_symlinked_episode_file_in_one_line_and_leaves_its_target(tmp_path, echo_protocol,
                                                                                      fixture_suites, cli):
    out, proto = tmp_path / "run", echo_protocol(n=1)
    _run(out, proto, fixture_suites)
    target = tmp_path / "precious.txt"
    target.write_bytes(b"not yours\n" + b'{"key": "torn')  # a torn tail the writer's repair would cut
    (out / EPISODES).unlink()
    (out / EPISODES).symlink_to(target)
    proc = cli("run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {out / EPISODES}: is a symlink; topoeval writes only regular files inside a run folder "
        "(remove it, or run into another folder)")
    assert target.read_bytes() == b"not yours\n" + b'{"key": "torn'


def test_foreign_records_never_stop_report_merge_or_resume_and_their_keys_run_again(tmp_path, echo_protocol,
                                                                                    fixture_suites, cli):
    out, proto = tmp_path / "run", echo_protocol(n=3)
    _run(out, proto, fixture_suites)
    path = out / EPISODES
    first, second, *_ = _lines(path)
    foreign = [{"key": first["key"]}, {**second, "scores": None}, {**second, "messages": "x"},
               {**second, "key": "no-bars"}, {**second, "key": 7}]
    with open(path, "a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in foreign))
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    said = report.stderr.strip().splitlines()
    assert len(said) == 1 and "and 2 more" in said[0]
    assert said[0].startswith(f"warning: {path}: skipped 5 line(s) that are not episode records: line 7 (55 bytes: "
                              "not an episode record (episode_id: Field required)), line 8 (")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreWarning)
        assert first["key"] not in finished_keys(out) and second["key"] not in finished_keys(out)
        res = _run(out, proto, fixture_suites)  # the two keys whose latest line is foreign run again
        assert res.new_episodes == 2 and res.reused_episodes == 4
        assert topoeval.api.merge_runs([out]).cells
    assert _lines(path)[6:11] == foreign  # the foreign lines stay in the file: nothing is lost


def test_a_full_disk_ends_a_run_in_one_line_that_says_the_episodes_are_kept(tmp_path, echo_protocol,
                                                                            fixture_suites, cli, monkeypatch):
    import errno

    from topoeval.runner import store as store_mod

    out, proto = tmp_path / "run", echo_protocol(n=3)
    _run(out, proto, fixture_suites)
    path = out / EPISODES
    kept = path.read_bytes().splitlines(keepends=True)[:-2]  # two episodes to run again
    path.write_bytes(b"".join(kept))
    real_write = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(EPISODES):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(store_mod.os, "write", full)
    proc = cli("run", str(proto), "-m", "oracle", "--suites-dir", str(fixture_suites), "--out", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (f"error: {out / EPISODES}: the disk is full (No space left on device); the episodes written "
                    f"before it are kept ({len(kept)} in the file): free some space, then run the same command "
                    "again to resume (finished episodes are not run again)")
    monkeypatch.undo()
    assert _run(out, proto, fixture_suites).new_episodes == 2
