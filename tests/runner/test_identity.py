"""A run's identity: every setting that can change an episode picks the default run folder, keys the
response cache, and a folder run under other settings is refused by name, never resumed (the issue's
repro: the same folder with another --temperature reported "0 new episodes, 6 resumed")."""

import asyncio
import json
import re

import pytest
from typer.testing import CliRunner

import topoeval
from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams
from topoeval.models.cache import CachedPolicy, ResponseCache
from topoeval.models.options import ModelOptions
from topoeval.runner import config as run_config
from topoeval.runner.config import RunConfig, cache_salt

from tests.models.scripted_server import ScriptedServer


@pytest.fixture
def server():
    s = ScriptedServer({})
    yield s
    s.stop()


def run(proto, out, server, fixture_suites, **settings):
    options = settings.pop("model_options", {})
    return topoeval.run_protocol(proto, ["direct:scripted"], out, suites_dirs=[fixture_suites],
                                 model_options=ModelOptions(api_base=server.api_base, timeout_s=5.0, **options),
                                 **settings)


#: (setting, first value, second value): each changes an episode, so each is the run's identity
SETTINGS = [
    ("temperature", 0.0, 0.9),
    ("top_p", 1.0, 0.5),
    ("max_tokens", 256, 512),
    ("max_turns", 4, 6),
    ("shots", [0], [0, 1]),
    ("tool_mode", "native", "prompt"),
    ("n_ctx", 4096, 8192),
]


@pytest.mark.parametrize("setting,first,second", SETTINGS, ids=[s[0] for s in SETTINGS])
def test_a_folder_run_under_another_setting_is_refused_by_name(tmp_path, echo_protocol, fixture_suites, server,
                                                               setting, first, second):
    proto, out = echo_protocol(n=2), tmp_path / "run"
    if setting == "shots":  # a protocol with a few-shot baseline to leave out
        proto.write_text(proto.read_text().replace("shots: [0]", "shots: [0, 1]"))

    def settings(value):
        return {"model_options": {setting: value}} if setting in ModelOptions.EPISODE_FIELDS else {setting: value}

    n = 4 * len(first) if setting == "shots" else 4
    assert run(proto, out, server, fixture_suites, **settings(first)).new_episodes == n
    again = run(proto, out, server, fixture_suites, **settings(first))
    assert (again.new_episodes, again.reused_episodes) == (0, n)
    with pytest.raises(UserError, match=re.escape(f"run with {setting} {first!r}, this run asks for {second!r}; use another out")):
        run(proto, out, server, fixture_suites, **settings(second))
    assert json.loads((out / "run.json").read_text())["identity"]["settings"][setting] == first


def test_the_cli_refuses_the_issues_repro(tmp_path, echo_protocol, fixture_suites, server):
    from topoeval.cli import app

    base = ["run", str(echo_protocol(n=2)), "--model", "direct:scripted", "--api-base", server.api_base, "--tasks", "2",
            "--suites-dir", str(fixture_suites), "--out", str(tmp_path / "X")]
    first = CliRunner().invoke(app, base)
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(app, [*base, "--temperature", "0.9"])
    assert isinstance(second.exception, UserError) and "temperature 0.0, this run asks for 0.9" in str(second.exception)
    assert "resumed" not in second.output


def test_the_default_folder_differs_with_each_setting(tmp_path, echo_protocol, fixture_suites, server, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proto = echo_protocol(n=1)
    folders = {run(proto, None, server, fixture_suites, **s).run_dir
               for s in ({}, {"temperature": 0.7}, {"top_p": 0.9}, {"model_options": {"tool_mode": "prompt"}})}
    assert len(folders) == 4


def test_a_new_decoding_version_is_refused_and_never_answered_from_the_cache(tmp_path, echo_protocol, fixture_suites,
                                                                             server, monkeypatch):
    proto, out = echo_protocol(n=2), tmp_path / "run"
    run(proto, out, server, fixture_suites)
    monkeypatch.setattr(run_config, "DECODING_VERSION", run_config.DECODING_VERSION + 1)
    with pytest.raises(UserError, match="decoding_version"):
        run(proto, out, server, fixture_suites)
    identity = json.loads((out / "run.json").read_text())["identity"]
    now = {**identity, "settings": {**identity["settings"], "decoding_version": run_config.DECODING_VERSION}}
    assert cache_salt(identity, "direct:scripted") != cache_salt(now, "direct:scripted")


class Local(Policy):
    """A stand-in for a local model: its inference fingerprint is what the test sets."""

    def __init__(self, slots: int, build: str = "b1"):
        self.name, self.calls = "local", 0
        self.inference = {"backend": "llama-server", "build": {"ggml_commit": build},
                          "batching": {"slots": slots, "n_ctx_per_slot": 8192}}

    async def act(self, messages, tools, sampling, ctx):
        self.calls += 1
        return AssistantMessage(content="done")


@pytest.mark.parametrize("change", [{"slots": 2}, {"build": "b2"}], ids=["local_slots", "build"])
def test_a_local_models_inference_fingerprint_is_its_identity(tmp_path, echo_protocol, fixture_suites, change):
    proto, out = echo_protocol(n=2), tmp_path / "run"
    topoeval.run_protocol(proto, [Local(1)], out, suites_dirs=[fixture_suites])
    assert topoeval.run_protocol(proto, [Local(1)], out, suites_dirs=[fixture_suites]).new_episodes == 0
    with pytest.raises(UserError, match="another inference for 'local' .*use another out folder"):
        topoeval.run_protocol(proto, [Local(**{"slots": 1, **change})], out, suites_dirs=[fixture_suites])


def test_the_cache_keys_on_the_models_inference(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    identity = {"settings": {"decoding_version": 1}, "models": {}}
    one, two = Local(1), Local(2)
    salts = [cache_salt({**identity, "models": {"local": {"inference": p.inference}}}, "local") for p in (one, two)]
    ctx = EpisodeContext(task=None, suite=None, sample=0, shots=0)
    msgs = [{"role": "user", "content": "hi"}]
    for policy, salt in zip((one, one, two), (salts[0], salts[0], salts[1])):
        asyncio.run(CachedPolicy(policy, cache, salt).act(msgs, [], SamplingParams(), ctx))
    assert (one.calls, two.calls) == (1, 1)  # the second slots setting was not answered from the first's reply
    cache.close()


def test_run_json_records_the_whole_config_but_no_key(tmp_path, echo_protocol, fixture_suites, server):
    out = tmp_path / "run"
    run(echo_protocol(n=1), out, server, fixture_suites, temperature=0.3, model_options={"api_key": "sk-secret"})
    meta = json.loads((out / "run.json").read_text())
    assert meta["config"]["temperature"] == 0.3 and meta["overrides"] == {"temperature": 0.3}
    assert meta["protocol"]["sampling"]["temperature"] == 0.3
    assert meta["config"]["models"] == ["direct:scripted"] and meta["config"]["executor"] == "local"
    assert "sk-secret" not in (out / "run.json").read_text()


def test_settings_are_checked_by_name():
    with pytest.raises(UserError, match="no setting 'temprature' \\(did you mean 'temperature'\\?\\)"):
        RunConfig.build("wiki_hops", ["oracle"], temprature=0.5)
    with pytest.raises(UserError, match="setting temperature: .*less than or equal to 2"):
        RunConfig.build("wiki_hops", ["oracle"], temperature=5)
    with pytest.raises(UserError, match="^shots \\[3\\]: none is among the protocol's baselines"):
        topoeval.run_protocol("wiki_hops", ["oracle"], shots=[3], tasks=1)


def test_a_config_is_one_object_for_the_api(tmp_path, echo_protocol, fixture_suites):
    cfg = RunConfig(protocol=echo_protocol(n=1), models=["oracle"], out=tmp_path / "run", suites_dirs=[fixture_suites])
    assert topoeval.run_protocol(cfg).new_episodes == 2
    assert topoeval.run_protocol(cfg, samples=2).new_episodes == 2  # one setting changed on top of it: 2nd samples


def test_another_tool_format_is_another_models_cells_never_a_resume(tmp_path, echo_protocol, fixture_suites, server):
    """A format other than the backend's own is part of the model's name (MODEL@FORMAT): its episodes are
    new cells beside the first format's, not the first format's episodes reported again."""
    proto, out = echo_protocol(n=2), tmp_path / "run"
    first = run(proto, out, server, fixture_suites, model_options={"tool_format": "hermes"})
    second = run(proto, out, server, fixture_suites, model_options={"tool_format": "json"})
    assert (first.new_episodes, second.new_episodes, second.reused_episodes) == (4, 4, 0)
    assert set(json.loads((out / "run.json").read_text())["identity"]["models"]) == {
        "direct:scripted@hermes", "direct:scripted@json"}


def test_the_cache_salt_keeps_to_what_changes_a_reply():
    """A turn limit or a baseline changes which requests a run makes, not the reply to one: a cache seeded
    from another protocol's run still answers; the decoding version and the tool mode do change it."""
    base = {"settings": {"decoding_version": 1, "tool_mode": "auto", "n_ctx": 8192, "max_turns": 12, "shots": [0]},
            "models": {"m": {}}}
    other_limits = {**base, "settings": {**base["settings"], "max_turns": 6, "shots": [0, 1]}}
    prompt_mode = {**base, "settings": {**base["settings"], "tool_mode": "prompt"}}
    assert cache_salt(base, "m") == cache_salt(other_limits, "m") != cache_salt(prompt_mode, "m")


def test_a_suites_behaviour_version_is_part_of_the_identity(tmp_path, monkeypatch):
    """A travel run folder made under another reader of the traveller's questions is refused by name (and the
    run id, a digest of the identity, differs): no run mixes episodes two readers answered."""
    from topoeval.protocol.discovery import SuiteRegistry

    travel = type(SuiteRegistry().get("travel"))
    version = travel.behaviour_version(None)
    assert version.startswith("traveller-")
    out = tmp_path / "run"
    topoeval.run_protocol("wiki_to_travel", ["oracle"], out, tasks=1, progress=False)
    identity = json.loads((out / "run.json").read_text())["identity"]
    assert identity["settings"]["suite_versions"] == {"travel": version}
    monkeypatch.setattr(travel, "behaviour_version", lambda self: "traveller-0")
    with pytest.raises(UserError, match="suite_versions"):
        topoeval.run_protocol("wiki_to_travel", ["oracle"], out, tasks=1, progress=False)


def test_suites_without_a_behaviour_version_keep_their_identity(echo_protocol, fixture_suites):
    """The default (None) adds nothing to the settings, so runs of such suites keep their run ids."""
    from topoeval.protocol.discovery import SuiteRegistry

    protocol = topoeval.load_protocol(echo_protocol(n=1), SuiteRegistry([fixture_suites]))
    identity = run_config.run_identity(RunConfig(protocol=protocol, models=["oracle"]), protocol, "p", "t", [], {})
    assert "suite_versions" not in identity["settings"]
