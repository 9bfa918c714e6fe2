"""Saved KV states of the prefix an episode shares with its cell, restored into the episode's slot.

Every episode of a cell (model × topology × baseline × sample) starts with the same text: the system
prompt, the tools and the demonstrations, then its own task. Computing that prefix again for every
episode costs most with demonstrations (× 1.91 on the leaderboard's collapse run); reusing whatever
a slot's previous episode left makes an episode depend on the one before it, because the floats of a
KV state depend on how its tokens were batched. So the prefix is computed once per server, from
scratch and alone (a request of the prefix only, in an idle slot), saved
(``POST /slots/{id}?action=save``), and restored into the slot of each episode that starts with it
(``?action=restore``) before the episode's first request, which then reuses it
(``cache_prompt: true``). An episode's tokens are a function of its own prompt and that saved state:
the same whichever episode, adapter or restart came before (tests/models/test_llama_server_isolation.py).

The states live in the server's ``--slot-save-path`` folder (removed with the server); at most
:data:`MAX_BYTES` of them, least recently used dropped first (a dropped one is recomputed, to the
same floats, when it is needed again).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from topoeval.models.llamacpp_tools import START

#: the task's turn: an episode's first prompt shares everything before its last user turn with its cell
TASK_TURN = START + "user\n"
#: the saved states one server keeps at most (a 135M model's KV is about 23 KB per token)
MAX_BYTES = 2 * 1024**3

#: ``await post(path, body)`` -> the server's JSON answer, for a path of the server's root
Post = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
#: ``await compute(prefix)``: one request of ``prefix`` alone, from scratch, in the episode's slot
Compute = Callable[[str], Awaitable[None]]


def shared_prefix(first_prompt: str) -> str:
    """What an episode's first prompt shares with the other episodes of its cell: the text before its
    last user turn (its task), or "" when the prompt has no turn before the task's."""
    cut = first_prompt.rfind(TASK_TURN)
    return first_prompt[:cut] if cut > 0 else ""


def state_name(adapter: str | None, prefix: str) -> str:
    """The saved state's file name: the adapter and the prefix (a state is only valid under its adapter)."""
    digest = hashlib.sha256(f"{adapter or ''}\0{prefix}".encode()).hexdigest()[:32]
    return f"prefix-{digest}.bin"


class PrefixStates:
    """The prefix states saved on one running server (a restarted server starts with none)."""

    def __init__(self, slot_dir: Path, max_bytes: int = MAX_BYTES):
        self.slot_dir, self.max_bytes = slot_dir, max_bytes
        #: file name -> its size, least recently used first
        self.saved: OrderedDict[str, int] = OrderedDict()
        #: states computed (a prefix first met, or one dropped and met again) and restores, for the bench
        self.computed = self.restored = 0
        self._locks: tuple[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] | None = None

    def lock(self, name: str) -> asyncio.Lock:
        """One save or restore of a state at a time; a state is never dropped while its lock is held
        (between its check and its restore). States of other models and cells do not wait for it."""
        loop = asyncio.get_running_loop()
        if self._locks is None or self._locks[0] is not loop:
            self._locks = (loop, {})
        return self._locks[1].setdefault(name, asyncio.Lock())

    async def restore(self, slot: int, adapter: str | None, first_prompt: str, post: Post, compute: Compute) -> bool:
        """Put the saved state of ``first_prompt``'s shared prefix into ``slot`` (computing and saving it
        the first time); False when the prompt shares nothing (the request is then computed from scratch)."""
        prefix = shared_prefix(first_prompt)
        if not prefix:
            return False
        name = state_name(adapter, prefix)
        async with self.lock(name):
            if name in self.saved:
                self.saved.move_to_end(name)
            else:
                await compute(prefix)
                saved = await post(f"/slots/{slot}?action=save", {"filename": name})
                self.computed += 1
                self.saved[name] = int(saved.get("n_written") or 0)
                self._drop_beyond_limit(keep=name)
            await post(f"/slots/{slot}?action=restore", {"filename": name})
            self.restored += 1
        return True

    def _drop_beyond_limit(self, keep: str) -> None:
        locks = self._locks[1] if self._locks else {}
        while sum(self.saved.values()) > self.max_bytes:
            oldest = next((name for name in self.saved
                           if name != keep and not (name in locks and locks[name].locked())), None)
            if oldest is None:  # every other state is being restored right now
                return
            del self.saved[oldest]
            (self.slot_dir / oldest).unlink(missing_ok=True)
