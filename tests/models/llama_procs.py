"""Helpers for tests of the llama-server processes topoeval runs: finding them in /proc, skipping
when the server is not built, and waiting for conditions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest


def llama_servers() -> set[int]:
    """Pids of running llama-server processes that serve on loopback (read from /proc)."""
    out = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if cmd and cmd[0].endswith(b"llama-server") and b"127.0.0.1" in cmd and state != "Z":
            out.add(int(proc.name))
    return out


def require_server() -> str:
    """The embedded GGUF's path; skips when it or the built llama-server is missing (make install makes both)."""
    from topoeval.core.errors import UserError
    from topoeval.models.embedded import embedded_gguf
    from topoeval.models.llamacpp_build import server_binary

    try:
        server_binary()
        return embedded_gguf()
    except UserError as exc:
        pytest.skip(str(exc))


def wait_for(cond, timeout_s: float = 120.0, every_s: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out waiting for {what}")
