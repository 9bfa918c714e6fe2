"""llama.cpp's ``llama-server`` as a process topoeval starts, health-checks, restarts and stops.

One server per base GGUF (and context, threads, slots) in a process: the embedded model and each
of its LoRA adapters share one loaded copy of the weights; a request names its adapter
(``"lora": [{"id": i, "scale": 1}]``, the others at 0). ``slots`` sequences decode together
(continuous batching).

The server-wide RAM prompt cache (``--cache-ram``, 8 GiB by default) is off: it restores into a slot
the KV state of whichever cached prompt shares the longest prefix — saved from any slot, *under any
adapter* — so an adapter's episode could start from a state another adapter (or the base) computed
(tests/models/test_llama_server_isolation.py provokes it). Each slot's own
prompt cache (``cache_prompt``) stays: the policy uses it within an episode only, after restoring
a saved state of the episode's shared prefix into its slot (``--slot-save-path``, a folder of the
server's own that goes with it; :mod:`topoeval.models.prefix_states`).

Only its owner's requests are served: every server gets a random API key of its own (or the one
given), passed in its environment (``LLAMA_API_KEY``: not on its command line, which any local
user can read); llama-server refuses a request without it (401) except ``/health``. The client
sends it as ``Authorization: Bearer <key>`` (:attr:`LlamaServer.headers`), so no other local
process can erase or restore slots, swap adapters (``/lora-adapters``) or take slots during a run.

Lifecycle (docs/models.md, "Local models"):

- started in a session (process group) of its own, on a free loopback port, its log in a file;
  ready when ``GET /health`` answers 200;
- stopped on every exit: :meth:`LlamaServer.stop` (SIGTERM to the group, SIGKILL after a grace
  period) when the run ends, at interpreter exit (``atexit``), and — through ``PR_SET_PDEATHSIG``,
  set in the child between fork and exec — when topoeval itself is killed (SIGKILL included). The
  server is spawned from the thread that owns the event loop (not a worker thread: the death
  signal fires when the *thread* that forked exits);
- a server that died (a signal, an exit) is reported as :class:`ServerDied` with the reason, which
  the policy turns into a restart and a retried turn (:mod:`topoeval.models.llama_server_policy`).
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


class ServerDied(Exception):
    """The llama-server process is gone (or never answered); ``reason`` says how."""

    def __init__(self, reason: str, log_tail: str = ""):
        super().__init__(reason + (f" (last log line: {log_tail})" if log_tail else ""))
        self.reason = reason
        self.log_tail = log_tail


def new_api_key() -> str:
    """A random key for one server (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"crashed with {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


class LlamaServer:
    """One running ``llama-server`` process (see the module docstring)."""

    def __init__(self, binary: str | Path, model: str, loras: list[str] | tuple[str, ...] = (), slots: int = 4,
                 n_ctx: int = 8192, n_threads: int | None = None, port: int | None = None,
                 startup_timeout_s: float = 120.0, extra_args: tuple[str, ...] = (), wait: bool = True,
                 api_key: str | None = None):
        self.binary, self.model, self.loras = str(binary), model, list(loras)
        #: the key every request but /health must carry (module docstring); random unless given
        self.api_key = api_key or new_api_key()
        self.slots, self.n_ctx = slots, n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        #: where ``POST /slots/{id}?action=save|restore`` keeps slot states (removed with the server)
        self.slot_dir = Path(tempfile.mkdtemp(prefix="llama-slots-"))
        cmd = [
            self.binary, "--model", model, "--host", "127.0.0.1", "--port", str(self.port),
            # each slot gets n_ctx of its own (a split cache: one sequence's attention never spans another's)
            "--parallel", str(slots), "--ctx-size", str(n_ctx * slots), "--no-kv-unified",
            "--threads", str(self.n_threads), "--threads-batch", str(self.n_threads),
            "--no-webui", "--alias", "local",
            # no server-wide prompt cache: it hands one adapter's KV state to another's slot (module docstring)
            "--cache-ram", "0", "--slot-save-path", str(self.slot_dir), *extra_args,
        ]
        for lora in self.loras:
            cmd += ["--lora", lora]
        if self.loras:
            cmd.append("--lora-init-without-apply")  # every request says which adapter it wants
        self.cmd = cmd
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "LLAMA_API_KEY": self.api_key},
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        atexit.register(self.stop)
        if wait:
            self.wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        return self.url + "/v1"

    @property
    def headers(self) -> dict[str, str]:
        """What every request to the server carries: its key, as a bearer token."""
        return {"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def death(self) -> ServerDied | None:
        """Why the process is gone, or None while it runs."""
        code = self.proc.poll()
        return None if code is None else ServerDied(describe_exit(code), self.log_tail())

    def health(self, timeout_s: float = 2.0) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=timeout_s) as r:
                return r.status == 200
        except (OSError, ValueError):
            return False

    def _ready(self, health_timeout_s: float) -> bool:
        """One readiness probe: True once ``/health`` answers 200; :class:`ServerDied` if the process is gone."""
        died = self.death()
        if died is not None:
            raise died
        return self.health(health_timeout_s)

    def _startup_timed_out(self) -> ServerDied:
        self.stop()
        return ServerDied(f"did not answer /health within {self.startup_timeout_s:.0f} s", self.log_tail())

    def wait_ready(self) -> None:
        """Block until ``/health`` answers 200; :class:`ServerDied` if it exits or takes too long."""
        while time.monotonic() < self.started_at + self.startup_timeout_s:
            if self._ready(2.0):
                return
            time.sleep(0.1)
        raise self._startup_timed_out()

    async def wait_ready_async(self) -> None:
        """:meth:`wait_ready` without blocking the event loop."""
        import asyncio

        while time.monotonic() < self.started_at + self.startup_timeout_s:
            if await asyncio.to_thread(self._ready, 1.0):
                return
            await asyncio.sleep(0.1)
        raise self._startup_timed_out()

    def post_sync(self, path: str, body: dict[str, Any], timeout_s: float = 120.0) -> dict[str, Any]:
        """One blocking request (the self-test and the bench); :class:`ServerDied` if the process died."""
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                return json.loads(r.read())
        except (OSError, urllib.error.URLError) as exc:
            time.sleep(0.2)  # a crash closes the socket a moment before the process is reaped
            died = self.death()
            if died is not None:
                raise died from None
            raise ServerDied(f"did not answer {path} ({type(exc).__name__}: {exc})", self.log_tail()) from None

    def log_tail(self, lines: int = 1) -> str:
        try:
            text = Path(self.log.name).read_text(errors="replace")
        except OSError:
            return ""
        kept = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(kept[-lines:])

    def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``grace_s``; idempotent. The log file
        is removed after a normal stop and kept after a death of its own (errors name its path)."""
        stopped_by_us = self.proc.poll() is None
        if stopped_by_us:
            stop_process_group(self.proc, grace_s)
        shutil.rmtree(self.slot_dir, ignore_errors=True)
        if not self.log.closed:
            self.log.close()
            if stopped_by_us:
                Path(self.log.name).unlink(missing_ok=True)
        try:
            atexit.unregister(self.stop)
        except Exception:  # pragma: no cover - interpreter shutting down
            pass


def stop_process_group(proc: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to the process group ``proc`` leads (started with ``start_new_session``), SIGKILL after
    ``grace_s``; the process alone when its group cannot be signalled."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()
