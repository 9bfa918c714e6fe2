"""bench/traveller_readers.py: a run's own ask_user questions, read by the reader now and at a revision."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    calls = [{"name": "ask_user", "arguments": {"question": "What's your budget?"}},
             {"name": "search_flights", "arguments": {"origin": "Lisbon"}},
             {"name": "ask_user", "arguments": {"question": "Is that fair?"}}]
    (run / "episodes.jsonl").write_text(json.dumps({"calls": calls}) + "\n" + json.dumps({"calls": None}) + "\n")
    return run


def _has(rev: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{rev}^{{commit}}"], cwd=ROOT, capture_output=True).returncode == 0


@pytest.mark.skipif(not _has("70c924a"), reason="reads the old reader from git history (a full clone)")
def test_the_same_reader_reads_every_question_alike_and_an_older_one_differs(tmp_path):
    run = _run_dir(tmp_path)
    same = subprocess.run([sys.executable, "bench/traveller_readers.py", str(run), "--against", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    assert "2 questions (2 distinct)" in same and "0 read differently" in same
    # before round 11's tag-question rule, "Is that fair?" was read as a question about events
    old = subprocess.run([sys.executable, "bench/traveller_readers.py", str(run), "--against", "70c924a"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "1 read differently" in old and "'Is that fair?'" in old and "('events',)" in old


def test_a_real_run_is_read_in_its_episodes_own_worlds(tmp_path):
    import topoeval

    run = topoeval.run_protocol("wiki_to_travel", ["oracle", "random"], tmp_path / "run", tasks=2, progress=False)
    out = subprocess.run([sys.executable, "bench/traveller_readers.py", str(run.run_dir), "--against", "HEAD"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    asked = sum(1 for line in (run.run_dir / "episodes.jsonl").read_text().splitlines()
                for call in json.loads(line)["calls"] or [] if call["name"] == "ask_user")
    assert asked > 0 and f"{asked} questions" in out and "0 read differently" in out
    assert "corpus world" not in out  # every episode's world was rebuilt from run.json
