"""The episode index: keys read from a line's text agree with the parsed record, the latest line of a
key wins, a torn line is skipped, and a record is read back by seeking to its offset."""

import json

import pytest

import topoeval
from topoeval.runner.store import read_episodes
from topoeval.view import index as view_index
from topoeval.view.index import (
    COLLATERAL,
    IRREVERSIBLE_COLLATERAL,
    NO_COLLATERAL,
    STATUSES,
    EpisodeIndex,
    _parsed,
    find_runs,
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "results" / "ref"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "random", "oracle-reckless"], out, tasks=3, shots=[0])
    return out


def test_the_index_agrees_with_the_records(run_dir):
    index = EpisodeIndex.build(run_dir)
    records = read_episodes(run_dir)
    assert len(index) == len(records) == 18
    for n, rec in enumerate(records):
        cell, task, sample, status, success, failing, collateral = index.rows[n]
        assert index.cells[cell] == (rec["model"], rec["baseline"], rec["topology"])
        assert index.tasks[task] == rec["task_id"] and sample == rec["sample"] and STATUSES[status] == rec["status"]
        assert success == int(rec["scores"]["success"] >= 1)
        assert bool(failing & (1 << 2)) == (rec["scores"]["risk"] is not None and rec["scores"]["risk"] < 1)
        damage = rec["scores"].get("collateral")  # travel defines a scope, wiki none
        assert collateral == (None if damage is None else NO_COLLATERAL if damage < 1 else
                              IRREVERSIBLE_COLLATERAL if rec["scores"]["collateral_irreversible"] >= 1 else COLLATERAL)
        assert index.records(n, n + 1) == [rec]


def _copy_and_retry(run_dir, tmp_path):
    """A fresh run folder, the run's episode lines, and episode 1 again as a failed retry."""
    copy = tmp_path / "run"
    copy.mkdir()
    lines = (run_dir / "episodes.jsonl").read_text().splitlines(keepends=True)
    retried = json.loads(lines[1])
    retried["scores"]["success"] = 0.0
    return copy, lines, retried


def test_a_retried_episode_keeps_its_place_and_a_torn_line_is_skipped(run_dir, tmp_path):
    copy, lines, retried = _copy_and_retry(run_dir, tmp_path)
    text = "".join(lines) + json.dumps(retried) + "\n" + lines[2][:50]
    (copy / "episodes.jsonl").write_text(text)
    (copy / "run.json").write_text("{}")
    index = EpisodeIndex.build(copy)
    assert len(index) == 18 and index.rows[1][4] == 0 and index.records(1, 2)[0]["scores"]["success"] == 0.0
    assert find_runs(tmp_path) == [copy]


def test_a_line_laid_out_otherwise_is_parsed_whole(run_dir, tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    recs = read_episodes(run_dir)
    (copy / "episodes.jsonl").write_text("".join(json.dumps(dict(reversed(list(r.items())))) + "\n" for r in recs))
    (copy / "summary.json").write_text("{}")
    index = EpisodeIndex.build(copy)
    assert [index.cells[r[0]][0] for r in index.rows] == [r["model"] for r in recs]


def test_the_keys_read_in_place_agree_with_each_line_parsed_whole(run_dir, tmp_path, monkeypatch):
    """Lines the fast path reads (as written, a status with a colon, a key with an escape, a score
    below 1 written as an exponent, a NaN elsewhere in the record) and lines it leaves to the parser
    (no success in the scores) give the same row as the line parsed whole."""
    copy = tmp_path / "run"
    copy.mkdir()
    recs = read_episodes(run_dir)
    variants = []
    for n, rec in enumerate(recs):
        rec = json.loads(json.dumps(rec))
        if n % 6 == 1:
            rec["status"] = "limit:max_turns"
        if n % 6 == 2:
            rec["task_id"] = rec["task_id"] + '"q'
            rec["key"] = "|".join([rec["model"], rec["baseline"], rec["topology"], rec["task_id"], str(rec["sample"])])
        if n % 6 == 3:
            rec["wall_s"] = float("nan")
            dims = [d for d in ("risk", "clarification", "efficiency") if rec["scores"].get(d) is not None]
            if dims:
                rec["scores"][dims[0]] = 1e-05  # written "1e-05"
        if n % 6 == 4:
            del rec["scores"]["success"]
        variants.append(rec)
    lines = [json.dumps(r) for r in variants]
    (copy / "episodes.jsonl").write_text("".join(line + "\n" for line in lines))
    (copy / "run.json").write_text("{}")
    whole = []
    monkeypatch.setattr(view_index, "_parsed", lambda line: whole.append(line) or _parsed(line))
    index = EpisodeIndex.build(copy)
    assert len(index) == len(recs) and "1e-05" in "".join(lines)
    assert len(whole) == len(lines[4::6])  # only the lines whose scores lack success were parsed whole
    for n, line in enumerate(lines):
        key, status, success, failing, collateral = _parsed(line.encode())
        cell, task, sample, *rest = index.rows[n]
        assert "|".join([*index.cells[cell], index.tasks[task], str(sample)]) == key
        assert rest == [status, success, failing, collateral], (n, line[-400:])
        assert index.records(n, n + 1)[0]["key"] == key
    assert index.rows[1][3] == "limit:max_turns" and index.rows[4][4] is None
    assert any(r[5] for n, r in enumerate(index.rows) if n % 6 == 3)  # 1e-05 is below 1


def test_collateral_read_in_place_agrees_with_the_line_parsed_whole(run_dir, tmp_path, monkeypatch):
    """Each episode's collateral code (damaged and irreversible, damaged, clean, not measured) read from the
    line's text is the one of the line parsed whole; a collateral value not laid out as the runner writes it
    sends the line to the parser."""
    (travel,) = [r for r in read_episodes(run_dir) if r["scores"].get("collateral") is not None][:1]
    variants = {(1.0, 1.0): IRREVERSIBLE_COLLATERAL, (1.0, 0.0): COLLATERAL, (0.0, 0.0): NO_COLLATERAL,
                (1.0, None): COLLATERAL, None: None, ("yes", 0.0): None}
    lines = []
    for n, variant in enumerate(variants):
        rec = json.loads(json.dumps(travel))
        rec["sample"], rec["key"] = n, rec["key"].rsplit("|", 1)[0] + f"|{n}"
        if variant is None:
            for k in ("collateral", "collateral_irreversible", "collateral_entities"):
                del rec["scores"][k]
        else:
            rec["scores"]["collateral"], rec["scores"]["collateral_irreversible"] = variant
        lines.append(json.dumps(rec))
    copy = tmp_path / "run"
    copy.mkdir()
    (copy / "episodes.jsonl").write_text("".join(line + "\n" for line in lines))
    (copy / "run.json").write_text("{}")
    whole = []
    monkeypatch.setattr(view_index, "_parsed", lambda line: whole.append(line) or _parsed(line))
    index = EpisodeIndex.build(copy)
    assert [r[6] for r in index.rows] == list(variants.values())
    assert [_parsed(line.encode())[4] for line in lines] == list(variants.values())
    assert len(whole) == 1 and b'"collateral": "yes"' in whole[0]  # only the string value was parsed whole


def test_an_index_read_in_two_goes_is_the_one_read_in_one(run_dir, tmp_path):
    """The server's first page of a run indexes its first episodes only, then reads on from there."""
    copy, lines, retried = _copy_and_retry(run_dir, tmp_path)
    (copy / "episodes.jsonl").write_text("".join(lines[:10]))
    (copy / "episodes.shard-1-of-2.jsonl").write_text("".join(lines[10:]) + json.dumps(retried) + "\n")
    (copy / "run.json").write_text("{}")
    whole = EpisodeIndex.build(copy)
    assert len(whole.files) == 2 and whole.complete and len(whole) == 18 and whole.rows[1][4] == 0
    part = EpisodeIndex.build(copy, until=5)
    assert len(part) == 5 and not part.complete
    assert part.rows[1][4] == 1 and part.rows[:1] + part.rows[2:] == whole.rows[:1] + whole.rows[2:5]  # no retry yet
    part.extend(3)  # already that far: nothing more is read
    assert len(part) == 5 and part.at[0] == 0
    part.extend(12)  # on into the second file
    assert len(part) == 12 and part.at[0] == 1 and not part.complete
    part.extend()
    assert part.complete and (part.rows, part.where, part.cells, part.tasks) == (
        whole.rows, whole.where, whole.cells, whole.tasks)


def test_foreign_lines_are_skipped_and_counted_and_the_rest_of_the_run_shows(tmp_path):
    """A key without ``|``, an integer key, ``"scores": null``, ``"messages": "x"`` (laid out as the runner
    writes a line, and otherwise), a non-object line: each is skipped and counted, never an error."""
    from tests.view.crafted import record, write_run

    good = [record(sample=n) for n in range(3)]
    foreign = [json.dumps({"key": "no-bars"}), json.dumps({**record(sample=5), "key": 7}),
               json.dumps(record(sample=6, scores=None)), json.dumps(record(sample=7, messages="x")),
               json.dumps(dict(reversed(list(record(sample=8, messages="x").items())))),
               json.dumps(record(sample=9, status=None)), "[1, 2]", "not json", json.dumps({"key": "a|b|c|d|e"})]
    run = write_run(tmp_path / "run", good[:1], extra_lines=foreign + [json.dumps(r) for r in good[1:]])
    index = EpisodeIndex.build(run)
    assert index.skipped == len(foreign) and len(index) == 3
    assert [r["sample"] for r in index.records(0, 3)] == [0, 1, 2]


def test_a_record_that_passes_the_index_but_cannot_be_drawn_reads_back_as_why(tmp_path):
    from tests.view.crafted import record, write_run

    run = write_run(tmp_path / "run", [record(), record(sample=1, calls="x")])
    index = EpisodeIndex.build(run)
    assert len(index) == 2 and index.skipped == 0  # calls lie past what the index reads in place
    ok, bad = index.records(0, 2)
    assert ok["sample"] == 0 and list(bad) == ["unreadable"] and bad["unreadable"].startswith(
        "not an episode record (calls")


def test_symlinked_episode_files_and_folders_are_not_read(run_dir, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "run.json").write_text("{}")
    (outside / "episodes.jsonl").write_bytes((run_dir / "episodes.jsonl").read_bytes())
    root = tmp_path / "results"
    root.mkdir()
    (root / "linked").symlink_to(outside, target_is_directory=True)  # a run folder outside the root
    run = root / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    (run / "episodes.jsonl").symlink_to(outside / "episodes.jsonl")
    assert find_runs(root) == []
    first_line = (run_dir / "episodes.jsonl").read_bytes().split(b"\n", 1)[0] + b"\n"
    (run / "episodes.shard-1-of-2.jsonl").write_bytes(first_line)
    assert find_runs(root) == [run]
    index = EpisodeIndex.build(run)
    assert [p.name for p in index.files] == ["episodes.shard-1-of-2.jsonl"] and len(index) == 1
