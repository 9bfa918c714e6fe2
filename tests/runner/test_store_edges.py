"""The episode store's bookkeeping at its edges, fast and without a run: counts of finished and errored
records (planned or not, at offset 0 too), a foreign line that takes a key's record away, a repair that
moves every offset, a closed store reopened by the next append, a full disk, a file swapped for a symlink,
and the readers' helpers (mutation testing found these unchecked: docs/development.md)."""

import errno
import io
import json
import os
import warnings

import pytest

from tests.runner.episode_records import episode, key_of
from topoeval.core.errors import UserError
from topoeval.runner import store as store_module
from topoeval.runner.plan_index import PlanIndex
from topoeval.runner.store import (
    EPISODES,
    DiskFull,
    EpisodeStore,
    PlannedRecords,
    StoreWarning,
    _copy,
    episode_files,
    finished_in,
    is_finished,
    read_episodes,
    read_json,
    record_line,
)

PLAN = PlanIndex(["m"], ["0-shot"], {"t": ["p1", "p2", "p3"]}, ["t"], 1)


def lines(*records) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_counts_finished_and_errored_records_planned_or_not_from_offset_0_on(tmp_path):
    (tmp_path / EPISODES).write_bytes(lines(episode("p1", status="error"), episode("x1", status="error"),
                                            episode("p2"), episode("x2")))
    store = EpisodeStore(tmp_path, plan=PLAN)
    assert len(store) == 4 and store.counts() == (1, 1) and store.errors() == 2
    assert store.finished(key_of("p2")) and not store.finished(key_of("p1")) and store.finished(key_of("x2"))
    assert key_of("p1") in store and key_of("x1") in store and key_of("p3") not in store
    assert key_of("nowhere") not in store and not store.finished(key_of("nowhere"))
    assert store.finished_at(1) and not store.finished_at(0) and not store.finished_at(2)
    store.close()


def test_a_finished_record_appended_is_finished_and_counted_once_per_key(tmp_path):
    store = EpisodeStore(tmp_path, plan=PLAN)
    store.append(episode("p1", status="error"))
    store.append(episode("x1", status="error"))
    assert (len(store), store.counts(), store.errors()) == (2, (0, 1), 2)
    store.append(episode("p1"))
    store.append(episode("x1"))
    assert (len(store), store.counts(), store.errors()) == (2, (1, 0), 0)
    assert store.finished(key_of("p1")) and store.finished(key_of("x1"))
    store.close()


def test_a_foreign_latest_line_takes_the_key_s_record_away(tmp_path):
    path = tmp_path / EPISODES
    path.write_bytes(lines(episode("p1"), episode("x1"), episode("x2"),
                           {"key": key_of("p1"), "scores": None}, {"key": key_of("x1"), "scores": None}))
    with pytest.warns(StoreWarning):
        store = EpisodeStore(tmp_path, plan=PLAN)
    assert len(store) == 1 and key_of("p1") not in store and key_of("x1") not in store
    assert list(store.keys()) == [key_of("x2")]
    store.close()
    path.write_bytes(lines(episode("x2"), {"key": key_of("x9"), "scores": None}))  # a key that had no record
    with pytest.warns(StoreWarning):
        store = EpisodeStore(tmp_path)  # no plan
    assert len(store) == 1 and list(store.keys()) == [key_of("x2")]
    store.close()


def test_a_repair_in_the_middle_moves_every_offset_and_the_store_reads_the_moved_records(tmp_path):
    path = tmp_path / EPISODES
    a, b, c = lines(episode("p1")), lines(episode("x1", status="error")), lines(episode("p2"))
    # the longer damaged line first: the copy goes by offset, not by size
    path.write_bytes(a + b'{"a longer torn line": [1, 2, \n' + b + b'{"torn": \xc3\n' + c[:-1])  # no final newline
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = EpisodeStore(tmp_path, plan=PLAN)
    assert len(caught) == 1  # one warning line, not a second one when the rewritten file is read again
    assert path.read_bytes() == a + b + c  # both damaged lines out, in order, and the last line ends in a newline
    assert len(store) == 3 and store.counts() == (2, 0) and store.errors() == 1
    assert [store.get(k)["key"] for k in (key_of("p1"), key_of("x1"), key_of("p2"))] == [
        key_of("p1"), key_of("x1"), key_of("p2")]
    store.close()


def test_a_torn_tail_is_cut_without_a_second_warning_and_the_counts_stay_right(tmp_path):
    path = tmp_path / EPISODES
    path.write_bytes(lines(episode("p1"), episode("x1")) + b'{"key": "m|0-shot|t|p2|0", "sta')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = EpisodeStore(tmp_path, plan=PLAN)
    assert len(caught) == 1 and str(caught[0].message).startswith(f"{path}: skipped 1 damaged line(s): line 3")
    assert len(store) == 2 and store.get(key_of("x1"))["key"] == key_of("x1")
    store.close()


def test_the_store_makes_its_folder_and_its_parents(tmp_path):
    store = EpisodeStore(tmp_path / "a" / "b")
    store.append(episode("x1"))
    store.close()
    assert (tmp_path / "a" / "b" / EPISODES).exists()


def test_a_closed_store_reopens_its_file_on_the_next_append_and_reads_after_close(tmp_path):
    store = EpisodeStore(tmp_path)
    store.append(episode("x1"))
    assert store.get(key_of("x1"))["key"] == key_of("x1")
    store.close()
    store.append(episode("x2"))
    assert store.get(key_of("x2"))["key"] == key_of("x2")
    store.close()
    store.close()  # closing twice is nothing
    assert [json.loads(x)["key"] for x in (tmp_path / EPISODES).read_text().splitlines()] == [key_of("x1"),
                                                                                              key_of("x2")]


def test_a_full_disk_while_appending_or_closing_is_one_line_with_the_system_s_words(tmp_path, monkeypatch):
    store = EpisodeStore(tmp_path)
    store.append(episode("x1"))

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(DiskFull, match=r"the disk is full \(No space left on device\); the episodes written before "
                                       r"it are kept \(1 in the file\)"):
        store.append(episode("x2"))
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(DiskFull, match=r"the disk is full \(No space left on device\)"):
        store.close()


def test_another_write_error_is_not_called_a_full_disk(tmp_path, monkeypatch):
    store = EpisodeStore(tmp_path)
    store.append(episode("x1"))

    def broken(*args):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "write", broken)
    with pytest.raises(OSError) as info:
        store.append(episode("x2"))
    assert not isinstance(info.value, DiskFull) and info.value.errno == errno.EIO
    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError) as info:
        store.close()
    assert not isinstance(info.value, DiskFull)


def test_an_episode_file_swapped_for_a_symlink_is_refused_in_one_line(tmp_path):
    store = EpisodeStore(tmp_path)
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    (tmp_path / EPISODES).symlink_to(target)
    with pytest.raises(UserError, match=f"^{tmp_path / EPISODES}: is a symlink; topoeval writes only regular files"):
        store.append(episode("x1"))
    assert target.read_text() == ""


def test_a_store_read_back_after_the_file_changed_names_the_file(tmp_path):
    path = tmp_path / EPISODES
    path.write_bytes(lines(episode("x1"), episode("x2")))
    store = EpisodeStore(tmp_path)
    path.write_bytes(lines(episode("x2"), episode("x1")))
    with pytest.raises(UserError, match=f"^{path}: changed while it was read"):
        store.get(key_of("x1"))
    with pytest.raises(UserError, match=f"^{path}: changed while it was read"):
        list(PlannedRecords(store))
    store.close()


def test_the_records_view_is_a_read_only_mapping_of_the_latest_records(tmp_path):
    (tmp_path / EPISODES).write_bytes(lines(episode("x1", status="error"), episode("x1")))
    store = EpisodeStore(tmp_path)
    view = store.records
    assert key_of("x1") in view and key_of("x2") not in view and 7 not in view
    assert view[key_of("x1")]["status"] == "done" and list(view) == [key_of("x1")] and len(view) == 1
    with pytest.raises(KeyError) as info:
        view[key_of("x2")]
    assert info.value.args == (key_of("x2"),)
    store.close()


def test_a_record_line_is_utf8_json_with_lone_surrogates_escaped():
    assert record_line({"a": "é"}) == '{"a": "é"}\n'.encode()
    assert record_line({"a": "\ud800"}) == b'{"a": "\\ud800"}\n'


def test_only_an_error_is_not_finished():
    assert is_finished({"status": "done"}) and is_finished({}) and not is_finished({"status": "error"})


def test_copy_copies_exactly_the_bytes_asked_in_bounded_chunks_and_returns_the_last():
    data = bytes(range(256)) * (10 * 1024)  # 2.5 MiB: three chunks
    dst = io.BytesIO()
    last = _copy(io.BytesIO(data), dst, 5, None)
    assert dst.getvalue() == data[5:] and last == data[5 + 2 * (1 << 20):]
    dst = io.BytesIO()
    assert _copy(io.BytesIO(data), dst, 3, 1) == data[3:4] and dst.getvalue() == data[3:4]
    assert _copy(io.BytesIO(data), io.BytesIO(), 3, 0) == b""
    dst = io.BytesIO()
    assert _copy(io.BytesIO(data), dst, 0, (1 << 20) + 7) == data[1 << 20:(1 << 20) + 7]
    assert dst.getvalue() == data[:(1 << 20) + 7]


def test_a_folder_s_episode_files_are_its_own_then_its_shards_by_count_and_index(tmp_path):
    for name in ("episodes.shard-10-of-12.jsonl", "episodes.shard-2-of-12.jsonl", "episodes.shard-1-of-3.jsonl"):
        (tmp_path / name).write_text("")
    assert [p.name for p in episode_files(tmp_path)] == [
        "episodes.shard-1-of-3.jsonl", "episodes.shard-2-of-12.jsonl", "episodes.shard-10-of-12.jsonl"]
    (tmp_path / EPISODES).write_text("")
    assert episode_files(tmp_path)[0].name == EPISODES


def test_finished_in_warns_naming_the_file_and_a_folder_without_episodes_has_none(tmp_path):
    path = tmp_path / EPISODES
    path.write_bytes(lines(episode("x1")) + b"{torn\n")
    with pytest.warns(StoreWarning, match=f"^{path}: skipped 1 damaged line"):
        assert finished_in(path) == {key_of("x1")}
    assert read_episodes(tmp_path / "empty") == []


def test_a_run_folder_s_json_file_is_read_or_refused_in_one_line(tmp_path):
    good, bad, binary, link = (tmp_path / n for n in ("good.json", "bad.json", "binary.json", "link.json"))
    good.write_text('{"a": "é"}')
    bad.write_text("{")
    binary.write_bytes(b'{"a": "\xff"}')
    link.symlink_to(good)
    assert read_json(good) == {"a": "é"}
    with pytest.raises(UserError, match=rf"^{tmp_path / 'none.json'}: not found \(is this a topoeval run folder\?\)$"):
        read_json(tmp_path / "none.json")
    with pytest.raises(UserError, match=rf"^{bad}: not valid JSON: Expecting property name enclosed in double quotes$"):
        read_json(bad)
    with pytest.raises(UserError, match=rf"^{binary}: not UTF-8 \(byte 7\)$"):
        read_json(binary)
    with pytest.raises(UserError, match=rf"^{link}: is a symlink or not a regular file; topoeval reads only regular "
                                        r"files inside a run folder$"):
        read_json(link)
    with pytest.raises(NotADirectoryError):
        read_json(tmp_path / "good.json" / "below")  # another error passes through


def test_store_module_exports_what_readers_import():
    assert {"MAX_LINE_BYTES", "NO_RECORD", "Scan", "StoreWarning", "record_at", "scan", "slot_code",
            "walk"} == set(store_module.__all__)


def test_a_record_at_offset_0_is_finished_or_errored_as_it_says(tmp_path):
    for status, finished in (("done", True), ("error", False)):
        for key in ("p1", "x1"):  # planned, and not
            (tmp_path / EPISODES).write_bytes(lines(episode(key, status=status)))
            store = EpisodeStore(tmp_path, plan=PLAN)
            assert store.finished(key_of(key)) is finished and store.errors() == (0 if finished else 1)
            if key == "p1":
                assert store.finished_at(0) is finished
            store.close()


def test_records_appended_to_an_existing_file_are_read_back_where_they_were_written(tmp_path):
    (tmp_path / EPISODES).write_bytes(lines(episode("x1")))
    store = EpisodeStore(tmp_path)
    for key in ("x2", "x3", "x4"):
        store.append(episode(key))
    assert [store.get(key_of(k))["key"] for k in ("x1", "x2", "x3", "x4")] == [key_of(k) for k in
                                                                             ("x1", "x2", "x3", "x4")]
    store.close()


def test_the_full_disk_line_says_how_to_resume(tmp_path, monkeypatch):
    store = EpisodeStore(tmp_path)

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(DiskFull) as info:
        store.append(episode("x1"))
    assert str(info.value).endswith("free some space, then run the same command again to resume (finished episodes "
                                    "are not run again)")


def test_a_repair_warns_once_even_when_foreign_lines_stay_in_the_file(tmp_path):
    path = tmp_path / EPISODES
    path.write_bytes(lines(episode("x1")) + b"{torn\n" + lines({"key": key_of("x2"), "scores": None}, episode("x3")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = EpisodeStore(tmp_path)
    assert len(caught) == 1 and "1 damaged line(s)" in str(caught[0].message)
    assert list(store.keys()) == [key_of("x1"), key_of("x3")]
    store.close()


def test_planned_records_stream_in_plan_order_and_count_what_owns_keeps(tmp_path):
    (tmp_path / EPISODES).write_bytes(lines(episode("p2"), episode("x1"), episode("p1")))
    store = EpisodeStore(tmp_path, plan=PLAN)
    everything = PlannedRecords(store)
    assert len(everything) == 3 and len(everything) == 3  # counted once, kept
    assert [r["key"] for r in everything] == [key_of("p1"), key_of("p2"), key_of("x1")]
    planned_only = PlannedRecords(store, owns=lambda key: key.split("|")[3].startswith("p"))
    assert len(planned_only) == 2 and [r["key"] for r in planned_only] == [key_of("p1"), key_of("p2")]
    store.close()


def test_write_json_writes_the_whole_file_at_once(tmp_path):
    from topoeval.runner.store import write_json

    write_json(tmp_path / "run.json", {"a": [1, "é"]})
    assert read_json(tmp_path / "run.json") == {"a": [1, "é"]}
