"""Reading an episode file: foreign records, symlinks and absurd lines are skipped with one warning, never a
traceback, and never followed or held in memory whole."""

import json
import warnings

import pytest

from tests.runner.episode_records import episode, key_of
from topoeval.runner import episode_file
from topoeval.runner.merged import KeyPositions, MergedRecords
from topoeval.runner.store import (
    EPISODES,
    StoreWarning,
    finished_keys,
    iter_records,
    read_episodes,
    read_records,
    scan,
)


def _write(path, lines):
    path.write_bytes(b"".join((json.dumps(x) if not isinstance(x, bytes) else x.decode()).encode() + b"\n"
                              for x in lines))
    return path


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [str(w.message) for w in caught if issubclass(w.category, StoreWarning)]


FOREIGN = [
    {"key": key_of("t1")},  # an existing key, nothing else
    episode("t2", scores=None),
    episode("t3", messages="x"),
    {**episode("t4"), "key": "no-bars"},
    {**episode("t4"), "key": 7},
]


def test_foreign_records_are_skipped_with_one_warning_that_counts_them(tmp_path):
    path = _write(tmp_path / EPISODES, [episode("t1"), episode("t2"), episode("t3"), *FOREIGN, episode("t5")])
    records, said = _warnings(lambda: read_records(path))
    assert len(said) == 1 and "\n" not in said[0]
    assert said[0].startswith(f"{path}: skipped 5 line(s) that are not episode records: line 4 (")
    assert "episode_id: Field required" in said[0] and "and 2 more" in said[0]
    # the latest line of a key decides: t1, t2 and t3 end in a foreign line, so they have no record (they run again)
    assert list(records) == [key_of("t5")]
    assert _warnings(lambda: finished_keys(tmp_path))[0] == {key_of("t5")}
    assert [r["key"] for r in _warnings(lambda: iter_records(path))[0]] == [key_of("t5")]
    assert [r["key"] for r in _warnings(lambda: read_episodes(tmp_path))[0]] == [key_of("t5")]
    merged, said = _warnings(lambda: MergedRecords([path], KeyPositions([key_of(f"t{i}") for i in range(1, 6)])))
    assert [r["key"] for r in merged] == [key_of("t5")] and len(said) == 1
    assert merged.missing() == [key_of(f"t{i}") for i in range(1, 5)]


def test_a_foreign_line_then_a_valid_record_of_its_key_gives_the_key_its_record(tmp_path):
    path = _write(tmp_path / EPISODES, [{"key": key_of("t1")}, episode("t1")])
    assert list(_warnings(lambda: read_records(path))[0]) == [key_of("t1")]


def test_a_symlinked_episode_file_is_not_read_and_says_so(tmp_path):
    target = _write(tmp_path / "elsewhere.jsonl", [episode("secret")])
    run = tmp_path / "run"
    run.mkdir()
    (run / EPISODES).symlink_to(target)
    (run / "episodes.shard-1-of-2.jsonl").symlink_to(target)
    records, said = _warnings(lambda: read_episodes(run))
    assert records == [] and len(said) == 1 and "symlink" in said[0] and str(run / EPISODES) in said[0]
    keys, said = _warnings(lambda: finished_keys(run))
    assert keys == set() and len(said) == 2
    merged, said = _warnings(lambda: MergedRecords([run / EPISODES]))
    assert list(merged) == [] and len(said) == 1


def test_a_fifo_named_like_an_episode_file_is_not_read(tmp_path):
    import os

    os.mkfifo(tmp_path / EPISODES)
    records, said = _warnings(lambda: read_episodes(tmp_path))  # returns at once: a FIFO is never read
    assert records == [] and len(said) == 1


def test_a_line_over_the_limit_is_skipped_in_bounded_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(episode_file, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(episode_file, "_CHUNK", 1024)
    huge = episode("t2", final_answer="x" * 200_000)
    path = _write(tmp_path / EPISODES, [episode("t1"), huge, episode("t3")])
    longest = []
    real_open = episode_file.open_for_reading

    class Spy:
        def __init__(self, fh):
            self._fh = fh

        def readline(self, size=-1):
            assert 0 < size <= 4097, "a line is read in bounded pieces"
            line = self._fh.readline(size)
            longest.append(len(line))
            return line

        def __getattr__(self, name):
            return getattr(self._fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._fh.close()

    monkeypatch.setattr(episode_file, "open_for_reading", lambda p: Spy(real_open(p)))
    found, said = _warnings(lambda: scan(path))
    assert [r["key"] for _, r in found.records] == [key_of("t1"), key_of("t3")]
    assert len(said) == 1 and "line 2" in said[0] and "over 4096 bytes" in said[0]
    assert max(longest) <= 4097
    assert found.good_end == path.stat().st_size and not found.damaged  # a whole line: kept, not repaired


@pytest.mark.parametrize("last", [b'{"key": "torn', b"x" * 10_000])
def test_an_unfinished_last_line_is_damage_the_writer_repairs(tmp_path, monkeypatch, last):
    monkeypatch.setattr(episode_file, "MAX_LINE_BYTES", 4096)
    path = tmp_path / EPISODES
    path.write_bytes(json.dumps(episode("t1")).encode() + b"\n" + last)
    found, said = _warnings(lambda: scan(path))
    assert len(found.damaged) == 1 and not found.foreign and found.tail_only and len(said) == 1
