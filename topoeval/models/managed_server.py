"""A model server topoeval starts from a user's command template, uses, and stops (``topoeval sweep --serve``).

The template is one command line (no shell: it is split with :func:`shlex.split` and run directly)
with these fields filled in:

| field | value |
|---|---|
| ``{port}`` | a free loopback port topoeval picked (the server must listen on 127.0.0.1 at it) |
| ``{path}`` | the checkpoint's weights folder (a server per checkpoint) |
| ``{name}`` | the name the checkpoint is served as (requests say ``"model": name``) |
| ``{lora_modules}`` | ``name=path`` for every LoRA checkpoint, space-separated: one server for all of them |

(vLLM: ``--enable-lora --lora-modules {lora_modules}``.)

The template is not run by a shell: it is split like a shell line, then each field is filled in as
one argument, whatever it holds (spaces, quotes, an apostrophe: ``bob's run/checkpoint-2``). So a
field is written bare, ``--model {path}``; one inside quotes (``"{path}"``, ``'{path}'``,
``"--model={path}"``) would reach the server with the quotes in it, and is refused with that hint.

Lifecycle (as :mod:`topoeval.models.llama_server` owns its llama-server; docs/sweeping.md):

- started in a session (process group) of its own, its output in a log file in the temporary
  folder (removed after a clean run; kept, and its path printed, when the server failed to start,
  exited on its own, or the run over it ended in an error or Ctrl-C); ready when
  ``GET /v1/models`` answers 200; a process that exits first, or no answer within
  ``startup_timeout_s``, is a one-line error with the last line of its log;
- stopped on every exit: :meth:`ManagedServer.stop` (SIGTERM to the group, SIGKILL after a grace
  period) at the end of its block (``with``), on an error, on Ctrl-C and on SIGTERM (the CLI turns
  SIGTERM into Ctrl-C), and at interpreter exit (``atexit``);
- when topoeval itself is killed (``kill -9`` included), through ``PR_SET_PDEATHSIG`` (Linux), set
  in the child between fork and exec: the kernel sends the server SIGKILL when the thread that
  started it dies. It reaches that process only: a server that forks workers of its own into
  other process groups must stop them itself when it dies (vLLM's and SGLang's do).
"""

from __future__ import annotations

import atexit
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.models.llama_server import _die_with_parent, describe_exit, free_port, stop_process_group

#: the fields a template may use
FIELDS = ("port", "path", "name", "lora_modules")


def check_template(template: str) -> None:
    """A one-line UserError for a template that names an unknown field or no ``{port}``, places a field
    inside quotes, or does not split as a command line (unclosed quotes)."""
    import string

    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise UserError(f"--serve {template!r}: {exc}") from None
    used = {f for _, f, _, _ in parsed if f is not None}
    unknown = sorted(used - set(FIELDS))
    if unknown:
        raise UserError(f"--serve: unknown field {{{unknown[0]}}}; a template may use "
                        + ", ".join(f"{{{f}}}" for f in FIELDS))
    if "port" not in used:
        raise UserError("--serve: the template must place {port} (topoeval picks a free port and waits for "
                        "GET /v1/models there)")
    if "lora_modules" not in used and "path" not in used:
        raise UserError("--serve: the template must place {path} (a server per checkpoint) or {lora_modules} "
                        "(one server for every LoRA checkpoint)")
    try:
        shlex.split(template)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise UserError(f"--serve {template!r}: cannot split it as a command line: {exc}") from None
    quoted = [f for f in _quoted_fields(parsed) if f != "port"]  # a port is digits: quotes do it no harm
    if quoted:
        raise UserError(f"--serve: {{{quoted[0]}}} is inside quotes; write {{{quoted[0]}}} bare: the command is split "
                        "like a shell line (no shell runs it) and each field is passed as one argument already, "
                        "spaces and quotes in it included, so the quotes would reach the server")


def _quoted_fields(parsed: list[tuple[str, str | None, str | None, str | None]]) -> list[str]:
    """The fields of a parsed template that stand inside single or double quotes, as :func:`shlex.split`
    (POSIX) reads them: a backslash escapes the next character outside quotes, and ``"`` or ``\\`` in
    double quotes."""
    found = []
    quote = ""  # the open quote, or "" outside quotes
    escaped = False
    for literal, field, _, _ in parsed:
        for ch in literal:
            if escaped:
                escaped = False
            elif quote == "'":
                quote = "" if ch == "'" else quote
            elif ch == "\\":
                escaped = True
            elif quote == '"':
                quote = "" if ch == '"' else quote
            elif ch in "'\"":
                quote = ch
        if field is not None:
            escaped = False  # a backslash before a field escapes the field's first character
            if quote:
                found.append(field)
    return found


class ManagedServer:
    """One running server started from a template (see the module docstring); a context manager."""

    def __init__(self, template: str, *, path: str | Path | None = None, name: str | None = None,
                 lora_modules: dict[str, str] | None = None, startup_timeout_s: float = 600.0,
                 grace_s: float = 10.0):
        check_template(template)
        self.port = free_port()
        self.grace_s = grace_s
        self.startup_timeout_s = startup_timeout_s
        # quoted, so that a path with spaces stays one argument and {lora_modules} becomes several
        modules = " ".join(shlex.quote(f"{k}={v}") for k, v in (lora_modules or {}).items())
        filled = template.format(port=self.port, path=shlex.quote(str(path or "")), name=shlex.quote(name or ""),
                                 lora_modules=modules)
        self.cmd = shlex.split(filled)  # bare fields only (check_template): each is one argument here
        self.log = tempfile.NamedTemporaryFile(prefix="topoeval-serve-", suffix=".log", delete=False)
        self.started_at = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                self.cmd, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        except OSError as exc:
            self.log.close()
            self.remove_log()  # nothing ran: nothing to read in it
            raise UserError(f"--serve: could not start {self.cmd[0]!r}: {exc.strerror or exc}") from None
        atexit.register(self.stop)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ManagedServer:
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        """Stop the server; remove its log after a clean run (no error, the server still up until now), else
        keep it and say where on stderr."""
        clean = exc_type is None and self.alive()
        self.stop()
        if clean:
            self.remove_log()
        else:
            print(f"--serve: {self.cmd[0]}'s log is kept: {self.log.name}", file=sys.stderr)

    def remove_log(self) -> None:
        try:
            os.unlink(self.log.name)
        except OSError:
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.api_base + "/models", timeout=2.0) as r:
                return r.status == 200
        except (OSError, ValueError):
            return False

    def wait_ready(self) -> None:
        """Block until ``GET /v1/models`` answers 200; a one-line UserError if the process exits or the
        time runs out (the log's last line and path in it)."""
        while time.monotonic() < self.started_at + self.startup_timeout_s:
            code = self.proc.poll()
            if code is not None:
                raise UserError(f"--serve: {self.cmd[0]} {describe_exit(code)} before answering "
                                f"(last log line: {self.log_tail() or 'none'}; log {self.log.name})")
            if self._answers():
                return
            time.sleep(0.2)
        raise UserError(f"--serve: {self.cmd[0]} did not answer GET {self.api_base}/models within "
                        f"{self.startup_timeout_s:.0f} s (log {self.log.name})")

    def models(self) -> list[str]:
        """The model ids ``GET /v1/models`` lists."""
        import json

        try:
            with urllib.request.urlopen(self.api_base + "/models", timeout=10.0) as r:
                data = json.loads(r.read())
            return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
        except (OSError, ValueError, AttributeError):
            return []

    def log_tail(self) -> str:
        try:
            lines = [ln.strip() for ln in Path(self.log.name).read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1] if lines else ""

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after the grace period; idempotent."""
        if self.proc.poll() is None:
            stop_process_group(self.proc, self.grace_s)
        else:  # the leader is gone: anything left in its group goes too
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not self.log.closed:
            self.log.close()
        try:
            atexit.unregister(self.stop)
        except Exception:  # pragma: no cover - interpreter shutting down
            pass
