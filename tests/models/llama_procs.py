"""Helpers for tests of the llama-server processes topoeval runs: finding them in /proc, skipping
when the server is not built, and waiting for conditions."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(64):
        if pid in (0, 1):
            return False
        pid = _ppid(pid)
        if pid == ancestor:
            return True
    return False


def llama_servers() -> set[int]:
    """Pids of running llama-server processes started by this test process or its children (read
    from /proc; other processes' servers on the machine are not this test's)."""
    out = set()
    me = os.getpid()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if cmd and cmd[0].endswith(b"llama-server") and state != "Z" and _descends_from(int(proc.name), me):
            out.add(int(proc.name))
    return out


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (whoever their parent is now: a server orphaned by a killed
    topoeval is re-parented, and must be found all the same)."""
    out = set()
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z":
                out.add(pid)
        except (OSError, IndexError):
            pass
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
