"""The writer cuts a torn tail off in place: the same file (its inode, and a reader that had it open sees the
cut), and no byte before the tail written again — a large run's episode file is never copied to repair
its last line. Damage in the middle is the one case that rewrites the file (a scratch file, an atomic
replace); tests/runner/test_store.py checks that one."""

import json
import os
import warnings
from pathlib import Path

import pytest

from tests.runner.episode_records import episode
from topoeval.runner.store import EPISODES, EpisodeStore, StoreWarning

IO = Path("/proc/thread-self/io")


def written() -> int:
    """Bytes this thread has passed to write calls so far (Linux's per-thread I/O accounting)."""
    return int(next(line for line in IO.read_text().splitlines() if line.startswith("wchar:")).split()[1])


def big_file(path: Path, records: int = 2000) -> bytes:
    """An episode file of ``records`` whole lines (about 1 MB); its bytes."""
    pad = "x" * 400
    data = b"".join(json.dumps(episode(f"t{i}", final_answer=pad)).encode() + b"\n" for i in range(records))
    path.write_bytes(data)
    return data


@pytest.mark.skipif(not IO.exists(), reason="needs Linux's per-thread I/O accounting (/proc/thread-self/io)")
@pytest.mark.parametrize("tail", [
    b'{"key": "m|0-shot|t|late|0", "status": "do',  # a line cut short
    b'{"key": "m|0-shot|t|late|0", "st\xc3',  # torn UTF-8
])
def test_a_torn_tail_is_cut_off_in_place_without_writing_the_file_again(tmp_path, tail):
    path = tmp_path / EPISODES
    good = big_file(path)
    with path.open("ab") as fh:
        fh.write(tail)
    inode = path.stat().st_ino
    with path.open("rb") as reader:  # a reader that has the file open while the writer repairs it
        before = written()
        with pytest.warns(StoreWarning, match="line 2001"):
            store = EpisodeStore(tmp_path)
        cost = written() - before
        assert path.stat().st_ino == inode  # the same file, not a copy put in its place
        assert cost <= 16  # the repair wrote (almost) nothing: not the 1 MB before the tail
        assert os.fstat(reader.fileno()).st_size == len(good)  # the reader's open file is the one cut
    assert path.read_bytes() == good
    assert len(store) == 2000 and store.get("m|0-shot|t|t1999|0")["final_answer"].startswith("x")
    store.append(episode("late"))
    store.close()
    assert path.read_bytes().startswith(good) and path.stat().st_ino == inode


@pytest.mark.skipif(not IO.exists(), reason="needs Linux's per-thread I/O accounting (/proc/thread-self/io)")
def test_a_last_line_without_its_newline_gets_one_byte_in_place(tmp_path):
    path = tmp_path / EPISODES
    good = big_file(path)
    path.write_bytes(good[:-1])  # the last record whole but its newline lost
    inode = path.stat().st_ino
    before = written()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)  # a whole record is not damage: no warning
        store = EpisodeStore(tmp_path)
    assert written() - before <= 1 + 16  # the newline, not the file
    assert path.stat().st_ino == inode and path.read_bytes() == good and len(store) == 2000
    store.close()


def test_damage_in_the_middle_is_the_one_repair_that_replaces_the_file(tmp_path):
    path = tmp_path / EPISODES
    first, last = json.dumps(episode("a")).encode() + b"\n", json.dumps(episode("c")).encode() + b"\n"
    path.write_bytes(first + b'{"key": "b", "stat\xc3\n' + last)
    inode = path.stat().st_ino
    with pytest.warns(StoreWarning, match="line 2"):
        store = EpisodeStore(tmp_path)
    store.close()
    assert path.read_bytes() == first + last and path.stat().st_ino != inode
