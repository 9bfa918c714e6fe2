"""`topoeval validate --oracle`: the oracle played once on every evaluated task; an answer its calls'
observations do not support, a plan call that errors, an oracle that fails — each one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from topoeval.core.suite import Task
from topoeval.runner.oracle_check import answer_tokens, unsupported

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "time"


def task(answer, aliases=(), **data):
    return Task(id="s/test/0", suite="s", split="test", index=0, family="f", prompt="p", answer=answer,
                answer_aliases=list(aliases), data=data)


def test_an_answer_is_supported_when_every_token_appears_in_an_observation():
    obs = '{"target": {"timezone": "Asia/Kolkata", "datetime": "2026-12-02T08:30:00+05:30"}}'
    assert answer_tokens("Kolkata 11:30, Tokyo 15:00.") == ["kolkata", "11:30", "tokyo", "15:00"]
    assert unsupported(task("08:30"), obs) is None
    assert unsupported(task("08:00"), obs) == "08:00"
    assert unsupported(task("08:00", aliases=["8:30"]), obs) is None  # one spelling is enough
    assert unsupported(task("Kolkata 08:30"), obs) is None
    assert unsupported(task("a; b", answer_contains=["kolkata", "tokyo"]), obs) == "tokyo"  # each contained string
    assert unsupported(task(None), obs) is None  # a state task: nothing to support


def test_validate_oracle_names_each_unsupported_answer_and_failing_plan(tmp_path, cli):
    pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed (the mcp extra has it)")
    shutil.copy(EXAMPLE / "protocol.yaml", tmp_path / "protocol.yaml")
    text = (EXAMPLE / "tasks.yaml").read_text()
    (tmp_path / "tasks.yaml").write_text(text)
    ok = cli("validate", "--oracle", "--allow-commands", str(tmp_path / "protocol.yaml"))
    assert ok.returncode == 0 and "ok (the oracle's plan checked" in ok.stdout, ok.stdout + ok.stderr
    # a wrong expected answer the oracle would repeat (success 1.0 in a run), and arguments the server rejects
    (tmp_path / "tasks.yaml").write_text(text.replace('answer: "08:30"', 'answer: "08:00"').replace(
        "time: \"09:15\", target_timezone: Asia/Tokyo", "time: \"09:15\", target_timezone: Asia/Tokio"))
    bad = cli("validate", "--oracle", "--allow-commands", str(tmp_path / "protocol.yaml"))
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert any("task 'tokyo-to-kolkata'" in line and "expected answer '08:00' is not supported by the observations "
               "of the calls that produced it (convert_time)" in line for line in lines), lines
    assert any("task 'dubai-to-tokyo'" in line and "was a tool error" in line and "Asia/Tokio" in line for line in lines)
    assert any("task 'dubai-to-tokyo'" in line and "the oracle does not succeed" in line for line in lines)
    assert not any("two-zones" in line for line in lines)
