"""Run folders as they may arrive from anyone, for the viewer's tests: one whose run.json names an MCP
suite whose server command and task fixture would each write a marker file, records with hostile
markup, foreign lines, and a real-run client that speaks to the served viewer with or without its token."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from topoeval.runner.prompts import PROMPTS_JSON

#: markup an episode may hold; it must be shown as text, never run
HOSTILE = '<img src=x onerror="document.title=\'pwned\'"><script>document.title=\'pwned\'</script>'


def record(model: str = "m", topology: str = "a", task: str = "t/test/0-x", sample: int = 0,
           text: str = "hello", **extra: Any) -> dict[str, Any]:
    """An episode record laid out as the runner writes it (its keys in the runner's order)."""
    rec: dict[str, Any] = {
        "key": f"{model}|0-shot|{topology}|{task}|{sample}", "episode_id": "e0", "model": model,
        "baseline": "0-shot", "topology": topology, "suite": "mcp", "role": "id", "demo_task_ids": [],
        "sample": sample, "shots": 0, "task_id": task, "family": "f", "status": "done", "final_answer": text,
        "turns": 2, "user_turns": 1,
        "messages": [
            {"role": "user", "content": f"Please {text}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "add_note", "arguments": json.dumps({"text": text})}}]},
            {"role": "tool", "tool_call_id": "c1", "content": text},
            {"role": "assistant", "content": text}],
        "n_demo_messages": 0,
        "calls": [{"id": "c1", "name": "add_note", "arguments": {"text": text}, "status": "ok", "observation": text,
                   "error": None, "effect": "reversible"}],
        "events": [], "state_diff": {}, "usage": {}, "cost": 0.0, "policy_s": 0.0, "wall_s": 0.0, "errors": [],
        "scores": {"success": 1.0, "f1": None, "dq": 1.0, "clarification": None, "priority": None, "risk": None,
                   "parallelism": None, "efficiency": 1.0, "tool_calls": 1, "invalid_calls": 0},
    }
    rec.update(extra)
    return rec


def marker_protocol(tmp_path: Path) -> tuple[dict[str, Any], list[Path]]:
    """A protocol (as run.json holds it) whose MCP server command and task-file fixture would each write
    a marker file if anything resolved it; the markers."""
    server_marker, fixture_marker = tmp_path / "server.marker", tmp_path / "fixture.marker"
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(json.dumps({
        "name": "t", "fixtures": {"base": [{"run": [sys.executable, "-c", f"open({str(fixture_marker)!r}, 'w')"]}]},
        "tasks": [{"name": "a", "split": "test", "fixture": "base", "instruction": "hi", "answer": "x"}]}))
    server = {"command": [sys.executable, "-c", f"open({str(server_marker)!r}, 'w')"], "startup_timeout_s": 5}
    topo = {"suite": "mcp", "params": {"server": server, "tasks": str(tasks)}}
    protocol = {"name": "p", "train": {"name": "a", **topo}, "test": [{"name": "a", "role": "id", **topo}],
                "tasks": {"test": {"n": 1}}}
    return protocol, [server_marker, fixture_marker]


def write_run(run_dir: Path, records: list[dict[str, Any]], run_json: dict[str, Any] | None = None,
              prompts: dict[str, Any] | None = None, extra_lines: list[str] = ()) -> Path:
    """A run folder: run.json, episodes.jsonl (the records, then any extra raw lines), and prompts.json
    when given (topology -> {system_prompt, tools})."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(run_json or {"protocol": {"name": "p"}}))
    lines = [json.dumps(r) for r in records] + list(extra_lines)
    (run_dir / "episodes.jsonl").write_text("".join(line + "\n" for line in lines))
    if prompts is not None:
        (run_dir / PROMPTS_JSON).write_text(json.dumps({"format": 1, "topologies": prompts}))
    return run_dir


def get(url: str, token: str | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of a GET, the token sent in the page's header when given."""
    req = urllib.request.Request(url, headers={**({"X-Topoeval-Token": token} if token else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
