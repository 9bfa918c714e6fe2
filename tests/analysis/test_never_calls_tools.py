"""Issue 60: a run says when a model never calls a tool. A cell where at least NO_TOOL_CALL_SHARE of at least
NO_TOOL_CALL_MIN_EPISODES scored episodes made no valid tool call is flagged in summary.json
(``never_calls_tools``), and the end of the run, report.md and report.html say so in one sentence naming the
likely causes and the flags that change them. A real stand-in server that answers in prose."""

import json

from aiohttp import web

from tests.chat_server import ThreadedChatServer
from topoeval.analysis.diagnostics import (
    NO_TOOL_CALL_MIN_EPISODES,
    NO_TOOL_CALL_SHARE,
    never_calls_tools,
    no_tool_call_notice,
)

PROTOCOL = """\
name: wiki2
train: {name: wiki, suite: wiki}
test:
  - {name: wiki, role: id, suite: wiki}
tasks:
  test: {n: 2, seed: 1}
limits: {max_turns: 3}
"""


class ProseServer(ThreadedChatServer):
    """A model that answers every turn in prose, never with a tool call."""

    def __init__(self) -> None:
        self.start()

    async def _chat(self, request: web.Request) -> web.Response:
        await request.json()
        return web.json_response({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "I think the answer is probably Paris, but I am not sure."}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 12}})


def cell(model: str, share: float | None, n: int, errors: int = 0) -> dict:
    return {"model": model, "baseline": "0-shot", "topology": "wiki", "n_episodes": n, "n_errors": errors,
            "diagnostics": {"no_tool_call_share": share, "no_tool_call_episodes": round((share or 0) * (n - errors))}}


def test_the_threshold_is_a_share_of_the_scored_episodes_and_a_minimum_count():
    assert (NO_TOOL_CALL_SHARE, NO_TOOL_CALL_MIN_EPISODES) == (0.8, 2)
    assert never_calls_tools(cell("direct:m", 0.8, 5))
    assert not never_calls_tools(cell("direct:m", 0.75, 4))  # 3 of 4: a model that calls sometimes
    assert not never_calls_tools(cell("direct:m", 1.0, 1))  # one episode says little
    assert not never_calls_tools(cell("direct:m", 1.0, 3, errors=2))  # errors are not the model's
    assert not never_calls_tools(cell("noop", 1.0, 10))  # a reference policy that calls nothing by design
    assert no_tool_call_notice([cell("direct:m", 0.75, 4)]) is None


def test_a_model_that_answers_in_prose_is_flagged_at_the_end_of_the_run_and_in_the_reports(cli, tmp_path):
    protocol = tmp_path / "wiki2.yaml"
    protocol.write_text(PROTOCOL)
    server = ProseServer()
    try:
        done = cli("run", protocol, "-m", "direct:prose,oracle", "--api-base", server.api_base, "--api-key", "k",
                   "--out", tmp_path / "run", "--no-progress")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    notices = [line for line in done.stderr.splitlines() if "No valid tool call" in line]
    assert len(notices) == 1  # one sentence
    assert "direct:prose · 0-shot · wiki (2 of 2)" in notices[0] and "oracle" not in notices[0]
    for flag in ("--tool-format", "MODEL@FORMAT", "--max-tokens", "chat template"):
        assert flag in notices[0]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    flags = {c["model"]: c["never_calls_tools"] for c in summary["cells"]}
    assert flags == {"direct:prose": True, "oracle": False}
    assert [c["diagnostics"]["no_tool_call_share"] for c in summary["cells"]
            if c["model"] == "direct:prose"] == [1.0]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "**No tool calls.** No valid tool call in at least 80% of the episodes of direct:prose" in report
    page = (tmp_path / "run" / "report.html").read_text()
    assert '<p class="warn"><b>No tool calls.</b> No valid tool call' in page
