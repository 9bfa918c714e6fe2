"""Several replicas of one model server (``--api-base`` given more than once): which one serves a request.

Each episode is pinned to one replica so its later turns reuse that server's prefix cache (the
system prompt, demos and the conversation so far): the replica is chosen by rendezvous hashing of
the episode key over the live replicas — the same key always lands on the same replica, and when
one replica goes down only its own episodes move, each to the replica that ranks next for its key.

A replica whose request fails with a dropped connection, a timeout or a 5xx is put in a cooldown
(doubling with each failure in a row, up to ``max_cooldown_s``); the failure is a
:class:`~topoeval.models.retry.TransientError`, so the retry path sends the episode's next attempt
to its next live replica. A replica that answers again is live again. When every replica is
cooling down, the one whose cooldown ends first is tried.
"""

from __future__ import annotations

import contextvars
import hashlib
import time
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topoeval.core.policy import EpisodeContext

#: The key of the episode whose request is being made (set around a policy's ``act``; None outside one).
CURRENT_EPISODE: contextvars.ContextVar[str | None] = contextvars.ContextVar("topoeval_episode", default=None)


def episode_pin(ctx: EpisodeContext) -> str:
    """What pins an episode to a replica: its run key when the runner gave one, else its identity
    within the policy (topology's suite, task, sample, shots)."""
    key = getattr(ctx, "key", None)
    if key:
        return key
    return f"{ctx.suite.name}|{ctx.task.id}|{ctx.sample}|{ctx.shots}"


def split_urls(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """``"u1,u2"`` or ``["u1", "u2,u3"]`` -> ``["u1", "u2", "u3"]`` (blanks dropped, order and duplicates kept once)."""
    if value is None:
        return []
    parts = [value] if isinstance(value, str) else list(value)
    urls = [u.strip() for part in parts for u in str(part).split(",")]
    return list(dict.fromkeys(u for u in urls if u))


class ReplicaPool:
    """The replicas of one model: pinning by key, cooldowns after failures, and counts of requests."""

    def __init__(self, urls: list[str], cooldown_s: float = 2.0, max_cooldown_s: float = 60.0):
        if not urls:
            raise ValueError("a replica pool needs at least one URL")
        self.urls = list(dict.fromkeys(urls))
        self.cooldown_s, self.max_cooldown_s = cooldown_s, max_cooldown_s
        self._down_until: dict[str, float] = {}
        self._failures: Counter[str] = Counter()
        #: requests sent to each replica, and those that failed (what tests and benches read)
        self.requests: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self._next = 0

    def __len__(self) -> int:
        return len(self.urls)

    def live(self, now: float | None = None) -> list[str]:
        now = time.monotonic() if now is None else now
        return [u for u in self.urls if self._down_until.get(u, 0.0) <= now]

    def pick(self, key: str | None) -> str:
        """The replica for the episode ``key`` (round-robin for requests outside an episode)."""
        if len(self.urls) == 1:
            url = self.urls[0]
        else:
            candidates = self.live() or [min(self.urls, key=lambda u: self._down_until.get(u, 0.0))]
            if key is None:
                url = candidates[self._next % len(candidates)]
                self._next += 1
            else:
                url = max(candidates, key=lambda u: _weight(key, u))
        self.requests[url] += 1
        return url

    def failed(self, url: str) -> None:
        """``url`` dropped a connection, timed out or answered 5xx: cool it down."""
        self.failures[url] += 1
        self._failures[url] += 1
        wait = min(self.max_cooldown_s, self.cooldown_s * 2 ** (self._failures[url] - 1))
        self._down_until[url] = time.monotonic() + wait

    def succeeded(self, url: str) -> None:
        if self._failures.get(url):
            self._failures[url] = 0
            self._down_until.pop(url, None)


def _weight(key: str, url: str) -> int:
    """Rendezvous (highest-random-weight) hash of one (episode, replica) pair."""
    return int.from_bytes(hashlib.sha256(f"{key}\x00{url}".encode()).digest()[:8], "big")
