"""The optional LLM traveller (--user-model) and `topoeval user-agreement`, against a real local
OpenAI-compatible HTTP server that plays the user (tests/suites/user_server.py)."""

import json
import subprocess

import pytest

import topoeval
from topoeval.analysis.user_agreement import user_agreement
from topoeval.core.errors import UserError
from topoeval.models.options import ModelOptions
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.topology import resolve

from user_server import UserServer  # tests/suites/ (no __init__: on sys.path)

USER = "direct:traveller"


@pytest.fixture
def server():
    s = UserServer()
    yield s
    s.stop()


def _module(name: str):
    """A module of the travel suite as the registry loads it."""
    import sys

    suite = SuiteRegistry().get("travel")
    world = suite.make_world(suite.tasks(suite.parse_params({}), "test", 0, 1)[0])
    package = type(world).__module__.rsplit(".", 1)[0]
    return sys.modules[type(world).__module__] if name == "world" else __import__(f"{package}.{name}", fromlist=["x"])


def test_parse_reply_bad_output_is_unanswered_not_a_crash():
    parse = _module("llm_user").parse_reply
    r, answer, err = parse('{"slots": ["budget", "dates"], "confirm": null, "answer": "Up to $300, on the 12th."}')
    assert (r.kind, r.slots, answer, err) == ("ask", ["budget", "dates"], "Up to $300, on the 12th.", None)
    assert parse('Sure: {"slots": [], "confirm": "as 12301"}')[0].flight == "AS12301"
    assert parse("I'd love to help")[2] == "reply is not a JSON object"
    assert parse('{"slots": ["seat"]}')[2] == "unknown slot 'seat'"
    assert parse('{"slots": "budget"}')[2] == "slots is not a list of names"


def test_run_with_a_user_model(tmp_path, server):
    opts = ModelOptions(api_bases=[server.api_base])
    res = topoeval.run_protocol("wiki_to_travel", ["oracle"], tmp_path / "r", tasks=6, shots=[0], user_model=USER,
                                model_options=opts)
    records = [json.loads(line) for line in (res.run_dir / "episodes.jsonl").read_text().splitlines()]
    travel = [r for r in records if r["suite"] == "travel"]
    asks = [e for r in travel for e in r["events"] if e["type"] == "ask"]
    assert server.requests and asks
    # the fixed instruction carries each task's hidden slots: the model answered from them, in its words
    protocol = topoeval.load_protocol("wiki_to_travel")
    topo = resolve(next(t for t in protocol.topologies() if t.name == "travel"), SuiteRegistry())
    truth = {t.id: t.data["truth"] for t in topo.tasks("test", protocol.tasks.test.seed, 6)}
    answered = 0
    for r in travel:
        t = truth[r["task_id"]]
        for m in r["messages"]:
            if m["role"] == "tool" and m["name"] == "ask_user" and m["content"].startswith("(llm) "):
                answered += 1
                if "dates you can fly" in m["content"]:
                    assert " or ".join(t["candidate_dates"]) in m["content"]
                if "airline:" in m["content"]:
                    assert (t["airline"] or "any airline is fine") in m["content"]
    assert answered == len(asks)
    # confirmations stay judged by the hidden constraints: the oracle books its target everywhere
    assert all(r["scores"]["success"] == 1.0 for r in travel)
    ident = json.loads((tmp_path / "r" / "run.json").read_text())["identity"]["settings"]
    assert ident["user_model"] == USER and ident["user_instruction_version"] >= 1
    # a folder run with one user is not resumed with another (nor with the deterministic one)
    with pytest.raises(UserError, match="user_model"):
        topoeval.run_protocol("wiki_to_travel", ["oracle"], tmp_path / "r", tasks=6, shots=[0])


def test_a_reply_that_is_not_json_counts_as_unanswered(server):
    llm_user = _module("llm_user")
    from topoeval.policies.user_model import close_user_models, user_model

    suite = SuiteRegistry().get("travel")
    task = suite.tasks(suite.parse_params({}), "test", 0, 1)[0]
    d = task.data
    t = llm_user.LLMTraveller(d["truth"], [], {}, d["flights"], user_model(USER, ModelOptions(api_bases=[server.api_base])))
    try:
        assert t.ask("GARBAGE: what is your budget?") == "I'm not sure what you mean."
        assert t.events[-1]["slots"] == [] and t.events[-1]["user_error"] == "reply is not a JSON object"
        assert t.ask(f"Shall I pay for {d['truth']['target']}?") == "Yes, go ahead."
    finally:
        close_user_models()


def test_user_agreement_per_slot(tmp_path, topoeval_cmd):
    run = tmp_path / "r"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "oracle-reckless"], run, tasks=8, shots=[0])
    server = UserServer(misread_airline=True)  # reads every airline question as a route question
    try:
        out = user_agreement(run, USER, ModelOptions(api_bases=[server.api_base]))
        proc = subprocess.run([*topoeval_cmd, "user-agreement", str(run), "--user-model", USER, "--api-base",
                               server.api_base], capture_output=True, text=True, timeout=300)
    finally:
        server.stop()
    qs = json.loads((run / "user_agreement.json").read_text())
    assert qs["n_questions"] == out["n_questions"] > 0
    n = out["n_questions"]
    slots = out["slots"]
    airline = slots["airline"]["reference"]
    assert airline > 0 and slots["airline"]["user_model"] == 0 and slots["route"]["user_model"] == airline
    assert slots["airline"]["agreement"] == pytest.approx(1 - airline / n)
    assert slots["confirm"]["agreement"] == 1.0 and slots["confirm"]["reference"] > 0
    assert slots["budget"]["both"] == slots["budget"]["reference"]
    assert out["exact"] == pytest.approx(1 - len([q for q in out["disagreements"]]) / n)
    assert proc.returncode == 0, proc.stderr
    assert f"{n} questions" in proc.stdout and "airline" in proc.stdout


def test_user_agreement_user_errors(tmp_path):
    with pytest.raises(UserError, match="no run.json"):
        user_agreement(tmp_path, USER)
    with pytest.raises(UserError, match="a reference policy cannot play the user"):
        topoeval.run_protocol("wiki_to_travel", ["oracle"], tmp_path / "r", tasks=2, shots=[0], user_model="oracle")


def test_episodes_do_not_wait_for_each_others_user_model(tmp_path):
    """A slow user model (each reply takes 0.4 s): the world step that waits on it runs off the event
    loop, so two episodes' user calls are in flight at the same time (with the step on the loop, each
    call blocked every episode and the server saw them one after another)."""
    slow = UserServer(delay_s=0.4)
    try:
        topoeval.run_protocol("wiki_to_travel", ["oracle"], tmp_path / "r", tasks=4, shots=[0], user_model=USER,
                              model_options=ModelOptions(api_bases=[slow.api_base]))
    finally:
        slow.stop()
    spans = sorted(slow.spans)
    assert len(spans) >= 4  # every oracle episode confirms its payment with the user at least
    overlapping = [(a, b) for i, a in enumerate(spans) for b in spans[i + 1:] if b[0] < a[1]]
    assert overlapping, spans
