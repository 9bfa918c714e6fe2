"""An on-disk response cache, so a re-run or a resumed run never pays twice for the same call.

Keyed by sha256 of (model, its weights, a salt, messages, tools, sampling params, sample index). The
runner's salt is the run identity's share for that model (:func:`topoeval.runner.config.cache_salt`:
the prompt/decoding code's version, tool mode, context window, a local model's inference
fingerprint), so a reply made under other settings or by other harness code is never reused.
SQLite in WAL mode: a killed process loses at most the response in flight.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams
from topoeval.formats import suite_format


class ResponseCache:
    def __init__(self, path: str | Path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        except sqlite3.DatabaseError as exc:  # not a database (damaged), or a disk that cannot take it
            self.db.close()
            raise UserError(f"{path}: the response cache cannot be used ({exc}); delete it (its replies are asked "
                            "again) or run with --no-cache") from None
        self.hits = self.misses = 0

    @staticmethod
    def key(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], sampling: SamplingParams,
            sample: int, salt: str = "") -> str:
        parts = [model, messages, tools, sampling.model_dump(), sample] + ([salt] if salt else [])
        blob = json.dumps(parts, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> AssistantMessage | None:
        row = self.db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return AssistantMessage.model_validate_json(row[0])

    def put(self, key: str, message: AssistantMessage) -> None:
        self.db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, message.model_dump_json()))

    def merge_from(self, path: str | Path) -> int:
        """Add the responses of the cache file at ``path`` that this one lacks (its own are never
        replaced); how many were added."""
        before = self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        self.db.execute("ATTACH DATABASE ? AS source", (str(path),))
        try:
            self.db.execute("INSERT OR IGNORE INTO responses SELECT key, value FROM source.responses")
        finally:
            self.db.execute("DETACH DATABASE source")
        return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] - before

    def close(self) -> None:
        self.db.close()


class CachedPolicy(Policy):
    """Wraps a model policy: identical requests are answered from the cache."""

    def __init__(self, inner: Policy, cache: ResponseCache, salt: str = ""):
        self.inner, self.cache, self.salt = inner, cache, salt
        self.name, self.concurrency, self.max_in_flight = inner.name, inner.concurrency, inner.max_in_flight

    @property
    def weights(self) -> str | None:  # type: ignore[override]  # read-only: the wrapped policy's
        return self.inner.weights

    @property
    def inference(self) -> dict | None:  # type: ignore[override]  # read-only: the wrapped policy's
        return self.inner.inference

    @property
    def tool_format(self) -> str | None:
        return getattr(self.inner, "tool_format", None)

    async def act(self, messages, tools, sampling: SamplingParams, ctx: EpisodeContext) -> AssistantMessage:
        # a name whose weights can change (a retrained adapter) keys on them too: never an old model's reply
        model = f"{self.name}@{self.weights}" if self.weights else self.name
        shifted = suite_format(ctx.suite)  # a format-shift step sends other text for the same messages
        if shifted is not None:
            model += f"|format={shifted}"
        key = self.cache.key(model, messages, tools, sampling, ctx.sample, self.salt)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"latency_s": 0.0})
        reply = await self.inner.act(messages, tools, sampling, ctx)
        self.cache.put(key, reply)
        return reply

    async def preflight(self) -> str | None:
        return await self.inner.preflight()

    async def aclose(self) -> None:
        await self.inner.aclose()
