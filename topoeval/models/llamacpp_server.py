"""A GGUF model behind a llama.cpp server that topoeval starts, reached through litellm.

The server (llama-cpp-python's, extra ``topoeval[local]``, started through
:mod:`topoeval.models.llamacpp_serve` so that it speaks the bounded ``topoeval-tools`` format)
binds 127.0.0.1 on a free port. It is stopped on every exit path: when the run ends or fails (``aclose``), at interpreter
exit (``atexit``), and — through ``PR_SET_PDEATHSIG`` on Linux — when topoeval itself is killed,
so it never outlives the run.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from topoeval.core.errors import UserError
from topoeval.models.litellm_backend import LiteLLMPolicy
from topoeval.models.llamacpp import INSTALL_HINT
from topoeval.models.llamacpp_format import for_chatml_function_calling
from topoeval.models.llamacpp_tools import CHAT_FORMAT_NAME
from topoeval.models.options import ModelOptions
from topoeval.core.policy import SamplingParams


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class LlamaServer:
    """A running ``llama_cpp.server`` subprocess."""

    def __init__(self, model_path: str, n_ctx: int, n_threads: int | None, startup_timeout_s: float = 120.0):
        try:
            import llama_cpp.server  # noqa: F401
        except ImportError:
            raise UserError(f"the llama.cpp server needs llama-cpp-python[server]: {INSTALL_HINT}") from None
        self.port = free_port()
        cmd = [
            sys.executable, "-m", "topoeval.models.llamacpp_serve", "--model", model_path, "--host", "127.0.0.1",
            "--port", str(self.port), "--chat_format", CHAT_FORMAT_NAME, "--n_ctx", str(n_ctx), "--model_alias", "local",
            "--verbose", "False",
        ]
        if n_threads:
            cmd += ["--n_threads", str(n_threads)]
        # the server's log goes to a file: an undrained pipe would fill up and stall the server
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        atexit.register(self.stop)
        self._wait_ready(startup_timeout_s)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise UserError(f"llama.cpp server exited with code {self.proc.returncode}: {self._log_tail()}")
            try:
                with urllib.request.urlopen(self.api_base + "/models", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise UserError(f"llama.cpp server did not answer within {timeout_s:.0f} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        self.log.seek(0)
        lines = self.log.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "(no output)"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()


class LlamaServerPolicy(LiteLLMPolicy):
    """litellm (``openai/local``) against a llama.cpp server started for this run."""

    concurrency = 1

    def __init__(self, model_path: str, options: ModelOptions, name: str | None = None):
        self.model_path = model_path
        self.server: LlamaServer | None = None
        super().__init__("openai/local", options.model_copy(update={"tool_mode": "native"}), name or os.path.basename(model_path))
        self._start_lock = asyncio.Lock()

    async def complete(self, messages, tools, sampling: SamplingParams):
        async with self._start_lock:
            if self.server is None:
                self.server = await asyncio.to_thread(LlamaServer, self.model_path, self.options.n_ctx, self.options.n_threads)
                self.options = self.options.model_copy(update={"api_base": self.server.api_base, "api_key": "none"})
        return await super().complete(for_chatml_function_calling(messages), tools, sampling)

    async def aclose(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
