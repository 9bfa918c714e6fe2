"""Local GGUF models (the embedded SmolLM2, its LoRA adapters, ``gguf:PATH``) through a llama-server
topoeval runs, on the same OpenAI-compatible client path as a vLLM server (``direct:``).

Every generation step of a turn (:func:`topoeval.models.llamacpp_tools.complete_with_tools`) is one
``POST /v1/completions`` with llama.cpp's extras: a GBNF ``grammar`` or a ``json_schema`` for the
step, the request's LoRA adapter, ``cache_prompt``. Transport, retries and error mapping are
:class:`~topoeval.models.direct.DirectPolicy`'s.

An episode's tokens depend on the episode alone: each episode is pinned to one slot of its model's
group, its first request is computed from scratch (``cache_prompt: false``) and its later requests
reuse only its own earlier KV (``cache_prompt: true``). Reusing whatever a slot's *previous* episode
left (the system prompt and tools every episode shares) is faster, but the floats of that prefix
depend on how it was batched then, so greedy tokens would depend on which episode ran before in the
slot — they changed with a resumed run, a shard, a restart or the other models on the server
(measured in tests/models/test_llama_server_isolation.py).

By default (``ModelOptions.local_prefix_states``; ``TOPOEVAL_LOCAL_PREFIX_STATES=0`` turns it off,
run.json's fingerprint records which path ran) the first request does not recompute the prefix the
episode shares with its cell (system prompt, tools, demonstrations): a saved state of that prefix,
computed once per server alone, is restored into the episode's slot before it
(:mod:`topoeval.models.prefix_states`) — as independent of history, without recomputing the prefix per
episode. Its greedy tokens differ from the from-scratch path's (the prefix is batched apart from the
task); the published numbers come from it.

Faults are episodes, not crashes: a server that dies (a signal, an exit) or stops answering is
restarted — at most :data:`MAX_RESTARTS` times per server — and the turn retried on the new one;
past that, the model's turns fail with one line naming the model and the crash, which the runner
records as episode errors (excluded from the scores, retried by the next run of the command; the
CLI exits 3).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.core.policy import SamplingParams
from topoeval.models.adapters import file_sha256, prompt_format
from topoeval.models.direct import DirectPolicy
from topoeval.models.llama_server import LlamaServer, ServerDied, free_port, new_api_key
from topoeval.models.llamacpp_format import for_chatml_function_calling
from topoeval.models.llamacpp_tools import END, RATIONALE_FORMAT, complete_with_tools
from topoeval.models.openai_format import message_from_openai
from topoeval.models.options import ModelOptions
from topoeval.models.prefix_states import PrefixStates
from topoeval.models.replicas import CURRENT_EPISODE
from topoeval.models.retry import PermanentError, TransientError

#: Restarts of one server after it died or hung, per run; then its model's turns fail.
MAX_RESTARTS = 3
#: Slots (sequences decoded together, continuous batching) per model on its server; ``ModelOptions.local_slots``
#: overrides. 1: on 2 cores more slots gave no more episodes/s (bench/local_models.py; the grammar-constrained
#: sampler, not the matrix work, bounds a 135M model) and batching changes greedy outputs.
DEFAULT_SLOTS = 1
#: llama-cpp-python's sampling defaults, kept so a sampled (temperature > 0) run means what it meant
SAMPLER_DEFAULTS = {"top_k": 40, "min_p": 0.05, "repeat_penalty": 1.0}


class ServerUnavailable(RuntimeError):
    """The model's server crashed more than :data:`MAX_RESTARTS` times: its turns fail, not retried."""


class SharedServer:
    """The llama-server of one base model in this process, shared by the policies of its adapters.

    Its users are held weakly: the adapters it loads and its slot groups are those of the policies
    alive when it starts, so a policy dropped without ``aclose`` (and its adapter) is forgotten."""

    def __init__(self, binary: Path, model: str, n_ctx: int, n_threads: int | None, slots: int):
        self.binary, self.model, self.n_ctx, self.n_threads, self.slots = binary, model, n_ctx, n_threads, slots
        self.port = free_port()
        #: the server's API key (llama_server: only its owner's requests), one per server of this process
        self.api_key = _API_KEYS.setdefault(self.key(), new_api_key())
        #: the started server's adapters (ids are positions) and its slot groups (None: the base)
        self.loras: list[str] = []
        self.groups: list[str | None] = []
        self._users: list[weakref.ref] = []
        self.server: LlamaServer | None = None
        #: the prefix states saved on the running server (none on a restarted one)
        self.prefixes: PrefixStates | None = None
        self.restarts = 0
        self._lock: asyncio.Lock | None = None
        #: the event loop and its FIFO lock that takes the models' requests in turn (see :meth:`request`)
        self._turns: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def live_users(self) -> list:
        self._users = [ref for ref in self._users if ref() is not None]
        return [ref() for ref in self._users]

    def register(self, policy) -> None:
        """A policy that will use this server (its adapter loaded and its slot group made at start)."""
        if policy not in self.live_users():
            self._users.append(weakref.ref(policy))

    def release(self, policy) -> None:
        self._users = [ref for ref in self._users if ref() is not None and ref() is not policy]
        if not self._users:
            self._stop()
            self._lock = None
            if _SERVERS.get(self.key()) is self:
                del _SERVERS[self.key()]

    def slot_ids(self, lora: str | None) -> list[int]:
        """The slots of one model (its group): a slot only ever serves one adapter, so its prompt
        cache is never thrown away by an adapter switch (llama-server clears it on every switch)."""
        g = self.groups.index(lora)
        return list(range(g * self.slots, (g + 1) * self.slots))

    def lora_ref(self, lora: str | None) -> list[dict[str, float]]:
        """The request's ``lora`` field: every loaded adapter, the request's own at scale 1 and the rest
        at 0 — for the base too. llama-server clears a slot's prompt cache only when a request's
        non-empty list differs from the slot's last one; an empty list (the base) would reuse a KV
        cache an adapter computed, and the base would answer partly as that adapter."""
        return [{"id": i, "scale": 1.0 if path == lora else 0.0} for i, path in enumerate(self.loras)]

    async def ensure(self, lora: str | None) -> LlamaServer:
        """The running server, (re)started when needed with the adapters of its live users."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.server is not None and self.server.alive():
                if lora in self.groups:
                    return self.server
                self._stop()  # a model that came after the start: restart with its adapter and group
            if self.server is not None:  # it died on its own
                died = self.server.death()
                self._count_restart(died.reason if died else "stopped")
            wanted = [p.lora_path for p in self.live_users()] + [lora]
            self.groups = list(dict.fromkeys(wanted))
            self.loras = [g for g in self.groups if g is not None]
            # spawned here, in the event loop's thread (see llama_server: the death signal)
            self.server = LlamaServer(self.binary, self.model, self.loras, slots=self.slots * len(self.groups),
                                      n_ctx=self.n_ctx, n_threads=self.n_threads, port=self.port, wait=False,
                                      api_key=self.api_key)
            self.prefixes = PrefixStates(self.server.slot_dir)
            try:
                await self.server.wait_ready_async()
            except ServerDied as exc:
                code = self.server.proc.poll()
                self.server.stop()
                if code is not None and code > 0:  # it refused its model or an adapter: a set-up error
                    names = ", ".join(Path(p).name for p in [self.model, *self.loras])
                    raise UserError(f"llama-server could not start with {names}: {exc.log_tail or exc.reason} "
                                    f"(log: {self.server.log.name})") from None
                self._count_restart(exc.reason)
                raise TransientError(f"llama-server {exc}") from None
            return self.server

    @contextlib.asynccontextmanager
    async def request(self) -> AsyncIterator[None]:
        """Hold while one request of a model is in flight, when the server has several models.

        llama-server never batches requests of different adapters together, and each iteration it
        serves the first busy slot (in slot order) and the slots of the same adapter: a model whose
        group comes later waited while any earlier one was busy, and with four models running
        episodes back to back, its requests timed out (15 minutes of retries in a collapse run).
        Taking the models' requests in turn, first come first served (asyncio's lock is FIFO), costs
        nothing that batching could have given and starves no one. The wait is not part of a
        request's timeout. One model alone (any number of slots) is not held."""
        if len(self.groups) <= 1:
            yield
            return
        loop = asyncio.get_running_loop()
        if self._turns is None or self._turns[0] is not loop:
            self._turns = (loop, asyncio.Lock())
        async with self._turns[1]:
            yield

    async def hung(self, server: LlamaServer) -> None:
        """A request to ``server`` timed out: kill it, if it does not answer /health, for a restart."""
        if server is self.server and server.alive() and not await asyncio.to_thread(server.health, 2.0):
            server.stop(grace_s=1.0)

    def _count_restart(self, reason: str) -> None:
        self.restarts += 1
        if self.restarts > MAX_RESTARTS:
            raise ServerUnavailable(f"llama-server of {Path(self.model).name} failed {self.restarts} times "
                                    f"(last: {reason}); log: {self.server.log.name if self.server else '-'}")

    def _stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def key(self) -> tuple:
        return server_key(self.binary, self.model, self.n_ctx, self.n_threads, self.slots)


_SERVERS: dict[tuple, SharedServer] = {}
#: each server's API key, kept for the process: a SharedServer made again for the same server (after
#: every user closed) keeps the key its policies' sessions already send
_API_KEYS: dict[tuple, str] = {}


def server_key(binary: Path, model: str, n_ctx: int, n_threads: int | None, slots: int) -> tuple:
    return (str(binary), model, n_ctx, n_threads, slots)


def shared_server(binary: Path, model: str, n_ctx: int, n_threads: int | None, slots: int) -> SharedServer:
    """The process's server of this base (a fresh one, restart count 0, once all its users are gone)."""
    key = server_key(binary, model, n_ctx, n_threads, slots)
    current = _SERVERS.get(key)
    if current is None or (not current.live_users() and current.server is None):
        _SERVERS[key] = SharedServer(binary, model, n_ctx, n_threads, slots)
    return _SERVERS[key]


class LlamaServerPolicy(DirectPolicy):
    """A GGUF model (optionally with a LoRA adapter) served by a llama-server of topoeval's."""

    serves_itself = True

    def __init__(self, model_path: str, options: ModelOptions, name: str | None = None, lora_path: str | None = None):
        from topoeval.models.llamacpp_build import server_binary

        self.model_path, self.lora_path = model_path, lora_path
        self.binary = server_binary()
        slots = options.local_slots or DEFAULT_SLOTS
        self.shared = shared_server(self.binary, model_path, options.n_ctx, options.n_threads, slots)
        super().__init__("local", options.model_copy(update={"api_base": f"http://127.0.0.1:{self.shared.port}/v1",
                                                             "api_bases": [], "api_key": self.shared.api_key}),
                         name or os.path.basename(model_path))
        # one episode per slot, pinned for its whole length, whatever --concurrency says
        self.concurrency = self.max_in_flight = slots
        self.shared.register(self)
        #: episode key -> the slot of this model's group it is pinned to, least recently used first
        self._pins: OrderedDict[str, int] = OrderedDict()
        #: episodes pinned whose first request has not been answered yet (from scratch, or a restored prefix)
        self._fresh: set[str] = set()
        #: restore saved prefix states instead of computing first requests from scratch (local_prefix_states)
        self.prefix_states = options.local_prefix_states
        #: an adapter trained with a line of text before its calls writes one (llamacpp_tools' module docstring)
        self.text_then_calls = lora_path is not None and prompt_format(lora_path) == RATIONALE_FORMAT

    def _slot_for(self, key: str) -> int:
        """The episode's slot: the one it had, else a free one of the group, else the least recently
        used (at most ``slots`` episodes of a model run at once, so that one's episode has ended)."""
        group = self.shared.slot_ids(self.lora_path)
        if key in self._pins and self._pins[key] in group:
            self._pins.move_to_end(key)
            return self._pins[key]
        taken = set(self._pins.values())
        free = [slot for slot in group if slot not in taken]
        if free:
            slot = free[0]
        else:
            stale, slot = next(iter(self._pins.items()))
            del self._pins[stale]
            self._fresh.discard(stale)
        self._pins[key] = slot
        self._fresh.add(key)
        return slot

    @property
    def weights(self) -> str | None:  # type: ignore[override]  # read-only: from the adapter file
        """The adapter file's sha256 (the base GGUF is fixed by the name; an adapter can be retrained)."""
        return file_sha256(Path(self.lora_path)) if self.lora_path else None

    @property
    def inference(self) -> dict[str, Any]:  # type: ignore[override]  # read-only: from the server
        """What decoding ran on (run.json's fingerprint, a share of the cache salt): the server build, its
        batching, this CPU, and the turn layout where it is not the plain one (an adapter whose record names
        the rationale layout decodes other text for the same messages)."""
        from topoeval.models.fingerprint import inference_fingerprint

        fingerprint = inference_fingerprint(self.binary, slots=self.shared.slots, n_ctx=self.shared.n_ctx,
                                            n_threads=self.shared.n_threads, prefix_states=self.prefix_states)
        return {**fingerprint, "prompt_format": RATIONALE_FORMAT} if self.text_then_calls else fingerprint

    def sampling_args(self, sampling: SamplingParams) -> dict[str, Any]:
        args = super().sampling_args(sampling)
        args.pop("max_tokens", None)
        return {**SAMPLER_DEFAULTS, **args}

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                       sampling: SamplingParams) -> AssistantMessage:
        response = await self.complete_openai(messages, tools, sampling)
        return message_from_openai(response["choices"][0]["message"], response.get("usage"))

    async def complete_openai(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                              sampling: SamplingParams) -> dict[str, Any]:
        """One turn as an OpenAI chat-completion response (what :meth:`complete` reads, and what
        ``topoeval serve-model`` answers a client with: the same layout, the same tokens)."""
        if _SERVERS.get(self.shared.key()) is not self.shared:  # used again after aclose
            self.shared = shared_server(self.binary, self.model_path, self.shared.n_ctx, self.shared.n_threads,
                                        self.shared.slots)
        self.shared.register(self)
        server = await self.shared.ensure(self.lora_path)
        sampler = self.sampling_args(sampling)
        lora = self.shared.lora_ref(self.lora_path)
        episode = CURRENT_EPISODE.get() or ""  # the key of the episode's pin ("" outside an episode)
        slot = self._slot_for(episode)

        async def gen(text: str, n: int, grammar: str | None = None, json_schema: dict | None = None,
                      stop: tuple[str, ...] = (END,)) -> tuple[str, int, int]:
            cache_prompt = episode not in self._fresh or (self.prefix_states
                                                           and await self._restore_prefix(server, slot, text, lora))
            body: dict[str, Any] = {"model": "local", "prompt": text, "max_tokens": n, "stop": list(stop),
                                    "cache_prompt": cache_prompt, "lora": lora, "id_slot": slot, **sampler}
            if grammar is not None:
                body["grammar"] = grammar
            if json_schema is not None:
                body["json_schema"] = json_schema
            try:
                async with self.shared.request():
                    data = await self.post_json("/completions", body)
            except PermanentError as exc:
                if json_schema in (None, {}) or exc.status != 400:
                    raise
                body["json_schema"] = {}  # a schema the server cannot turn into a grammar: any JSON
                async with self.shared.request():
                    data = await self.post_json("/completions", body)
            self._fresh.discard(episode)  # the slot now holds this episode's own prefix
            try:
                usage = data.get("usage") or {}
                return (data["choices"][0]["text"], int(usage.get("prompt_tokens") or 0),
                        int(usage.get("completion_tokens") or 0))
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                raise RuntimeError(f"malformed response from llama-server: {str(data)[:200]!r}") from exc

        # native mode: the chatml-function-calling shape; prompt mode (tools=[]): the messages as ChatPolicy made them
        shaped = for_chatml_function_calling(messages) if tools else messages
        try:
            response = await complete_with_tools(gen, shaped, tools, sampling.max_tokens, self.text_then_calls)
        except TransientError as exc:
            await asyncio.sleep(0.2)  # a crash closes the socket a moment before the process is reaped
            died = server.death()
            if died is None and "Timeout" in str(exc):
                await self.shared.hung(server)
            elif died is not None:
                raise TransientError(f"llama-server {died}; restarting it") from None
            raise
        return response

    async def _restore_prefix(self, server: LlamaServer, slot: int, first_prompt: str,
                              lora: list[dict[str, float]]) -> bool:
        """Restore the saved state of the episode's shared prefix into its slot (see the module docstring)."""
        prefixes = self.shared.prefixes
        if prefixes is None or server is not self.shared.server:
            return False

        async def compute(prefix: str) -> None:  # the prefix alone, from scratch, under the slot's adapter
            body = {"model": "local", "prompt": prefix, "max_tokens": 1, "temperature": 0.0,
                    "cache_prompt": False, "lora": lora, "id_slot": slot}
            async with self.shared.request():
                await self.post_json("/completions", body)

        async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            async with self.shared.request():
                return await self._post_server(server, path, body)

        return await prefixes.restore(slot, self.lora_path, first_prompt, post, compute)

    async def _post_server(self, server: LlamaServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST to the server's root (``/slots/...``, outside ``/v1``); any failure is transient: the turn
        is retried, and starts again from the prefix."""
        session = self._session if self._session is not None and not self._session.closed else await self._get_session()
        try:
            async with session.post(server.url + path, data=json.dumps(body)) as resp:
                raw = await resp.read()
        except (TimeoutError, aiohttp.ClientConnectionError) as exc:
            raise TransientError(f"llama-server {path}: {type(exc).__name__}: {exc}") from exc
        if resp.status != 200:
            raise TransientError(f"llama-server {path}: HTTP {resp.status}: {raw[:200]!r}", status=resp.status)
        return json.loads(raw)

    async def aclose(self) -> None:
        await super().aclose()
        self.shared.release(self)

