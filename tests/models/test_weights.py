"""A retrained adapter keeps its name, not its weights: the response cache keys on the weights, and a
run folder refuses to resume a model whose weights changed (its finished episodes are the old model's)."""

import asyncio

import pytest

import topoeval
from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams
from topoeval.models import adapters
from topoeval.models.cache import CachedPolicy, ResponseCache
from topoeval.policies.registry import make_policy


class Answers(Policy):
    """Answers every turn with the same text; counts its calls."""

    def __init__(self, weights: str | None, text: str = "done"):
        self.name, self.weights, self.text, self.calls = "trained", weights, text, 0

    async def act(self, messages, tools, sampling, ctx):
        self.calls += 1
        return AssistantMessage(content=self.text)


@pytest.mark.local_model
def test_an_adapters_fingerprint_is_its_files_sha256(tmp_path, monkeypatch):
    from tests.models.llama_procs import require_server

    require_server()
    import hashlib
    import json

    monkeypatch.setattr(adapters, "ADAPTERS_DIR", tmp_path)
    monkeypatch.delenv(adapters.ENV, raising=False)

    def train(data: bytes) -> None:  # an adapter file and the training record that vouches for it
        (tmp_path / "smollm2-135m-wiki.gguf").write_bytes(data)
        (tmp_path / "smollm2-135m-wiki.json").write_text(
            json.dumps({"adapter_gguf": {"sha256": hashlib.sha256(data).hexdigest()}}))

    train(b"first training")
    first = make_policy("smollm2-135m-wiki").weights
    train(b"retrained")
    assert first and make_policy("smollm2-135m-wiki").weights not in (None, first)
    assert make_policy("smollm2-135m").weights is None  # the embedded base is fixed by its name


def test_the_cache_never_answers_for_other_weights(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    params = SamplingParams(temperature=0.0, seed=0)
    ctx = EpisodeContext(task=None, suite=None, sample=0, shots=0)
    old, new, same = Answers("a" * 64, "old"), Answers("b" * 64, "new"), Answers("a" * 64, "other")
    msgs = [{"role": "user", "content": "hi"}]
    assert asyncio.run(CachedPolicy(old, cache).act(msgs, [], params, ctx)).content == "old"
    assert asyncio.run(CachedPolicy(new, cache).act(msgs, [], params, ctx)).content == "new" and new.calls == 1
    assert asyncio.run(CachedPolicy(same, cache).act(msgs, [], params, ctx)).content == "old" and same.calls == 0
    cache.close()


def test_resuming_a_folder_with_retrained_weights_is_refused(tmp_path, echo_protocol, fixture_suites):
    proto, out = echo_protocol(n=2), tmp_path / "run"
    topoeval.run_protocol(proto, [Answers("a" * 64)], out, suites_dirs=[fixture_suites])
    assert topoeval.run_protocol(proto, [Answers("a" * 64)], out, suites_dirs=[fixture_suites]).new_episodes == 0
    with pytest.raises(UserError, match="other weights .*aaaaaaaaaaaa, now bbbbbbbbbbbb.*use another out folder"):
        topoeval.run_protocol(proto, [Answers("b" * 64)], out, suites_dirs=[fixture_suites])
