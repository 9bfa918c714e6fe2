"""The embedded SmolLM2-135M addressed in the ``hermes`` and ``json`` prompt formats on its llama-server
(marked ``local_model``): the requests carry the format's text and no grammar-constrained tools, the
replies are read as that format's calls, and whatever the small model writes is an episode, never a
crash. One wiki task, 1-shot (the demo shows the format), two turns."""

import json

import pytest

import topoeval
from tests.models.llama_procs import llama_servers, require_server
from topoeval.formats import get_format
from topoeval.policies.registry import make_policy

pytestmark = pytest.mark.local_model

PROTOCOL = """\
name: wiki_formats
train: {name: wiki, suite: wiki}
test:
  - {name: wiki, role: id, suite: wiki, params: {question_types: [single]}}
tasks:
  test: {n: 1, seed: 11}
  fewshot: {n: 4, seed: 12}
baselines: {shots: [1]}
limits: {max_turns: 2, max_tokens: 48}
"""
MARKERS = {"hermes": "<tool_call>", "json": "a JSON list of such objects"}


def test_the_embedded_model_in_hermes_and_json(tmp_path):
    require_server()
    before = llama_servers()
    proto = tmp_path / "p.yaml"
    proto.write_text(PROTOCOL)
    sent: dict[str, list] = {}
    replies: dict[str, list] = {}
    policies = []
    for fmt in ("hermes", "json"):
        policy = make_policy(f"smollm2-135m@{fmt}")
        complete = policy.complete

        async def spy(messages, tools, sampling, fmt=fmt, complete=complete):
            sent.setdefault(fmt, []).append((messages, tools))
            reply = await complete(messages, tools, sampling)
            replies.setdefault(fmt, []).append(reply.content or "")
            return reply

        policy.complete = spy
        policies.append(policy)
    res = topoeval.run_protocol(proto, policies, tmp_path / "r", cache=False)
    eps = [json.loads(line) for line in (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()]
    assert {e["model"] for e in eps} == {"smollm2-135m@hermes", "smollm2-135m@json"}
    assert res.errors == 0 and all(e["status"] != "error" and not e["errors"] for e in eps), [e["errors"] for e in eps]
    assert all(e["usage"]["completion_tokens"] > 0 for e in eps)
    for fmt in ("hermes", "json"):
        turns = [(m, t) for m, t in sent[fmt] if len(m) > 1]  # not the preflight
        assert turns and all(tools == [] for _, tools in turns)  # tools are in the text, not grammar-constrained
        assert all(MARKERS[fmt] in messages[0]["content"] for messages, _ in turns)
        ep = next(e for e in eps if e["model"] == f"smollm2-135m@{fmt}")
        # every reply is read in the model's format: the episode's calls are exactly what the format parses
        parsed = [name for text in replies[fmt] for name, _ in get_format(fmt).parse(text, [
            {"type": "function", "function": t} for t in _wiki_tools()])[1]]
        assert [c["name"] for c in ep["calls"]] == parsed, (replies[fmt], ep["calls"])
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["tool_formats"]["models"] == {"smollm2-135m@hermes": "hermes", "smollm2-135m@json": "json"}
    assert llama_servers() == before  # the server never outlives the run


def _wiki_tools():
    from topoeval.protocol.discovery import SuiteRegistry

    wiki = SuiteRegistry().get("wiki")
    return [t.openai()["function"] for t in wiki.tools_for(wiki.parse_params({}))]
