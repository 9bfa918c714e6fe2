"""Invalid tool calls become recorded error observations; the world never sees them."""

import json

from topoeval.core.messages import ToolCall
from topoeval.runner.tool_exec import execute_call, observation_text
from topoeval.core.suite import Effect, ToolError, ToolSpec, World


class Recorder(World):
    def __init__(self):
        self.events, self.seen, self.state = [], [], {"n": 0}

    def call(self, name, arguments):
        self.seen.append((name, arguments))
        if name == "boom":
            raise RuntimeError("suite bug")
        if arguments.get("n") == 13:
            raise ToolError("unlucky number")
        self.state["n"] += arguments.get("n", 0)
        return {"ok": True}

    def snapshot(self):
        return dict(self.state)


TOOLS = {
    "add": ToolSpec(
        name="add", description="", effect=Effect.write, idempotent=False, parallel_safe=False,
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False},
    ),
    "boom": ToolSpec(name="boom", description="", effect=Effect.read, idempotent=True, parallel_safe=True),
}


def run(name, raw):
    world = Recorder()
    rec = execute_call(ToolCall(id="c", name=name, arguments=raw), 0, TOOLS, world)
    return rec, world


def test_valid_call_executes_and_tracks_state_change():
    rec, world = run("add", '{"n": 2}')
    assert rec.status == "ok" and rec.state_changed and world.seen == [("add", {"n": 2})]
    assert json.loads(observation_text(rec)) == {"ok": True}


def test_unknown_tool():
    rec, world = run("sub", '{"n": 2}')
    assert rec.status == "invalid" and "unknown tool 'sub'" in rec.error and not world.seen
    assert "unknown tool" in json.loads(observation_text(rec))["error"]


def test_non_json_and_non_object_arguments():
    for raw, why in [('{"n": 2', "not valid JSON"), ("[1]", "must be a JSON object")]:
        rec, world = run("add", raw)
        assert rec.status == "invalid" and why in rec.error and not world.seen


def test_schema_violations():
    for raw, why in [('{"n": "two"}', "n: 'two' is not of type 'integer'"), ("{}", "'n' is a required property"),
                     ('{"n": 1, "m": 2}', "Additional properties")]:
        rec, world = run("add", raw)
        assert rec.status == "invalid" and why in rec.error and not world.seen


def test_world_refusal_and_suite_crash_are_recorded():
    rec, _ = run("add", '{"n": 13}')
    assert rec.status == "tool_error" and rec.error == "unlucky number" and not rec.state_changed
    rec, _ = run("boom", "")
    assert rec.status == "crash" and "RuntimeError: suite bug" in rec.error
