"""docs/results.md's lists of a run folder's files stay true: a zero-shot run writes exactly the files
listed without "(only ...)", and a few-shot run adds plot_fewshot.png."""

import re
from pathlib import Path

import topoeval
from tests.conftest import ECHO_PROTOCOL

DOC = Path(__file__).resolve().parent.parent / "docs" / "results.md"


def listed() -> tuple[set[str], set[str]]:
    """(always written, written only under a condition): the names of results.md's file list items."""
    always, sometimes = set(), set()
    for m in re.finditer(r"^- ((?:`[^`]+`(?:, )?)+)( \(only [^)]*\))?(?: —|$)", DOC.read_text(encoding="utf-8"), re.M):
        names = set(re.findall(r"`([^`]+)`", m.group(1)))
        (sometimes if m.group(2) else always).update(names)
    return always, sometimes


def test_the_lists_are_there():
    always, sometimes = listed()
    assert {"run.json", "plan.json", "episodes.jsonl", "summary.json", "report.md", "report.html"} <= always
    assert {"plot_fewshot.png", "plot_ladder.png", "cache.sqlite"} <= sometimes


def test_a_zero_shot_run_writes_exactly_the_unconditional_files(tmp_path, fixture_suites):
    always, sometimes = listed()
    proto = tmp_path / "p.yaml"
    proto.write_text(ECHO_PROTOCOL.format(n=2, samples=1, delay=0.0))
    out = tmp_path / "run"
    topoeval.run_protocol(proto, ["oracle", "noop"], out, suites_dirs=[fixture_suites])
    assert {p.name for p in out.iterdir()} == always
    fewshot = tmp_path / "f.yaml"
    fewshot.write_text(ECHO_PROTOCOL.format(n=2, samples=1, delay=0.0).replace("shots: [0]", "shots: [0, 1]"))
    topoeval.run_protocol(fewshot, ["oracle"], tmp_path / "few", suites_dirs=[fixture_suites])
    assert {p.name for p in (tmp_path / "few").iterdir()} == always | {"plot_fewshot.png"}
