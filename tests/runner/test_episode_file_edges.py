"""topoeval.runner.episode_file at its edges, each function alone and fast: what a line is, where an over-long
line ends, how a slot finds an errored record, what a FIFO or an unreadable path is, and the one warning
line in full (mutation testing found these unchecked: docs/development.md)."""

import errno
import io
import json
import os
from pathlib import Path

import pytest

from tests.runner.episode_records import episode, key_of
from topoeval.core.errors import UserError
from topoeval.runner import episode_file
from topoeval.runner.episode_file import (
    Scan,
    _parse,
    not_regular,
    open_regular,
    read_line,
    record_at,
    slot_code,
    walk,
)


def test_a_line_is_json_or_says_why_not():
    assert _parse(b'{"a": 1}\n') == ({"a": 1}, None)
    nan, why = _parse(b'{"a": NaN}\n')  # orjson refuses NaN; the standard library decides
    assert why is None and nan["a"] != nan["a"]
    assert _parse(b'{"a": ') == (None, "not complete JSON")  # cut short: no newline
    assert _parse(b'{"a": \n') == (None, "not JSON")  # a whole line that is not JSON
    assert _parse(b'{"a": "\xc3"}\n') == (None, "not UTF-8 (torn)")


def test_a_slot_is_the_offset_of_a_finished_record_and_minus_offset_minus_2_of_an_errored_one():
    assert (slot_code(10, True), slot_code(10, False), slot_code(0, False)) == (10, -12, -2)


def test_a_slot_reads_back_an_errored_record_anywhere_in_the_file(tmp_path):
    path = tmp_path / "e.jsonl"
    first = (json.dumps(episode("a")) + "\n").encode()
    path.write_bytes(first + (json.dumps(episode("b", status="error")) + "\n").encode())
    with path.open("rb") as fh:
        assert record_at(fh, slot_code(len(first), False), path, key_of("b"))["status"] == "error"
        assert record_at(fh, slot_code(0, True), path, key_of("a"))["key"] == key_of("a")
        with pytest.raises(UserError, match=f"^{path}: changed while it was read \\(another key's line where "
                                            f"{key_of('b')}'s was\\); is another process writing it\\?$"):
            record_at(fh, slot_code(0, True), path, key_of("b"))


def test_a_slot_that_lands_on_an_over_long_line_names_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(episode_file, "MAX_LINE_BYTES", 16)
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"key": "' + b"x" * 40 + b'"}\n')
    with path.open("rb") as fh, pytest.raises(UserError, match=r"changed while it was read \(over 16 bytes\)"):
        record_at(fh, 0, path, "x")


def test_a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_skipped():
    assert read_line(io.BytesIO(b"abcd"), limit=4) == (b"abcd", 4, False)  # the last line, no newline
    assert read_line(io.BytesIO(b"abcd\nef"), limit=4) == (b"abcd\n", 5, True)  # its newline is not counted
    assert read_line(io.BytesIO(b"abcde\nef"), limit=4) == (None, 6, True)
    assert read_line(io.BytesIO(b"abcdefgh"), limit=4) == (None, 8, False)
    assert read_line(io.BytesIO(b""), limit=4) == (b"", 0, False)


def test_an_over_long_whole_line_is_foreign_and_an_over_long_last_one_is_damage(tmp_path, monkeypatch):
    monkeypatch.setattr(episode_file, "MAX_LINE_BYTES", 300)
    record = (json.dumps(episode("a")) + "\n").encode()
    assert len(record) < 300
    long = b'{"key": "' + b"x" * 400 + b'"}\n'
    path = tmp_path / "e.jsonl"
    path.write_bytes(record + long + b'{"key": "' + b"y" * 400)
    found = Scan()
    assert [key for _, _, key, _ in walk(path, found)] == [key_of("a")]
    assert found.foreign == [(2, len(record), len(long), "over 300 bytes")]
    assert found.damaged == [(3, len(record) + len(long), 409, "not complete JSON")]
    assert (found.good_end, found.newline) == (len(record) + len(long), True)


def test_the_warning_line_lists_three_lines_of_each_kind_and_counts_the_rest():
    found = Scan(damaged=[(n, 0, 10 * n, "not JSON") for n in (1, 2, 3, 4, 5)],
                 foreign=[(n, 0, 7, "not an episode record (x)") for n in (6, 7, 8)])
    assert found.report(Path("e.jsonl")) == (
        "e.jsonl: skipped 5 damaged line(s): line 1 (10 bytes: not JSON), line 2 (20 bytes: not JSON), line 3 "
        "(30 bytes: not JSON) and 2 more; 3 line(s) that are not episode records: line 6 (7 bytes: not an episode "
        "record (x)), line 7 (7 bytes: not an episode record (x)), line 8 (7 bytes: not an episode record (x))")
    four = Scan(damaged=[(n, 0, 1, "x") for n in (1, 2, 3, 4)])
    assert four.report(Path("e")) == "e: skipped 4 damaged line(s): line 1 (1 bytes: x), line 2 (1 bytes: x), line 3 " \
                                     "(1 bytes: x) and 1 more"


def test_a_symlink_or_a_fifo_is_not_read_with_a_warning_in_full(tmp_path):
    target = tmp_path / "t.jsonl"
    target.write_text(json.dumps(episode("a")) + "\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.warns(episode_file.StoreWarning) as caught:
        assert list(walk(link, Scan())) == []
    assert str(caught[0].message) == (f"{link}: not read: it is a symlink or not a regular file (topoeval reads only "
                                      "regular files inside a run folder)")


def test_what_is_not_a_regular_file_is_named(tmp_path):
    regular, fifo, link = tmp_path / "r", tmp_path / "f", tmp_path / "l"
    regular.write_text("x")
    os.mkfifo(fifo)
    link.symlink_to(regular)
    assert (not_regular(regular), not_regular(tmp_path / "none"), not_regular(link), not_regular(fifo),
            not_regular(tmp_path)) == (None, None, "a symlink", "not a regular file", "not a regular file")
    assert not_regular(regular / "below") == os.strerror(errno.ENOTDIR)  # a file is not a folder: lstat fails


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)  # opening it for reading would block without O_NONBLOCK
    with pytest.raises(OSError) as info:
        open_regular(fifo)
    assert (info.value.errno, info.value.strerror, info.value.filename) == (errno.EINVAL, "not a regular file",
                                                                             str(fifo))


def test_a_reader_s_descriptor_blocks_and_a_new_file_gets_the_usual_mode(tmp_path):
    path = tmp_path / "new.jsonl"
    fd = open_regular(path, os.O_WRONLY | os.O_CREAT)
    try:
        assert os.stat(path).st_mode & 0o777 == 0o666 & ~_umask()
    finally:
        os.close(fd)
    fd = open_regular(path)
    try:
        assert os.get_blocking(fd)  # O_NONBLOCK (for a FIFO's sake) is taken off a reader's regular file
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_slot_on_a_line_of_its_key_that_is_no_longer_a_record_is_a_change(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"key": key_of("a"), "scores": None}) + "\n")
    with path.open("rb") as fh, pytest.raises(UserError, match=r"changed while it was read \(not an episode record"):
        record_at(fh, 0, path, key_of("a"))


def test_a_line_that_is_json_but_not_an_object_is_foreign_and_names_no_key(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("[1, 2]\n" + json.dumps(episode("a")) + "\n")
    found = Scan()
    assert [(n, key) for n, _, key, _ in walk(path, found)] == [(2, key_of("a"))]
    assert found.foreign == [(1, 0, 7, "not an episode record (not an object)")]


def test_the_writer_refuses_a_symlink_in_one_line_naming_it(tmp_path):
    from topoeval.runner.episode_file import refuse_irregular

    target, link = tmp_path / "t", tmp_path / "episodes.jsonl"
    target.write_text("")
    link.symlink_to(target)
    refuse_irregular(target)  # a regular file: nothing to say
    with pytest.raises(UserError) as info:
        refuse_irregular(link)
    assert str(info.value) == (f"{link}: is a symlink; topoeval writes only regular files inside a run folder "
                               "(remove it, or run into another folder)")
