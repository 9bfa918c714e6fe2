"""One episode's MCP world: a fresh scratch folder filled from the task's fixture (built once per
process into a template, then copied), a fresh server on it, the simulated user, and the task's
state commands and checks.

Observations are the server's result text with the scratch folder's path written as ``.``, so
transcripts do not depend on where the folder happened to be. Calls to tools the overlay marks
irreversible are recorded as ``commit`` events (object: the value of the tool's object argument,
or the tool's name). :meth:`McpWorld.close` stops the server and deletes the folder; a world
dropped without closing is cleaned up when it is garbage-collected or the interpreter exits.
"""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.suite import ToolError, World, WorldError

from .annotations import ASK_USER
from .connection import McpConnection, result_text
from .params import ServerSpec
from .taskfile import Check, build_fixture, run_command, substitute
from .user import User


_TEMPLATES: dict[str, Path] = {}
_template_root: Path | None = None


def materialize(steps: list[dict[str, Any]], env: dict[str, str], workdir: Path,
                pass_env: list[str] | tuple[str, ...] = ()) -> None:
    """Fill ``workdir`` from fixture ``steps``: built once per process into a template folder, then
    copied (steps that mention ``{workdir}`` are run in place every time)."""
    global _template_root
    if "{workdir}" in json.dumps(steps):
        build_fixture(steps, workdir, env, pass_env)
        return
    key = json.dumps([steps, env, list(pass_env)], sort_keys=True)
    if key not in _TEMPLATES:
        if _template_root is None:
            _template_root = Path(tempfile.mkdtemp(prefix="topoeval-fixtures-"))
            atexit.register(shutil.rmtree, _template_root, True)
        template = _template_root / str(len(_TEMPLATES))
        template.mkdir()
        build_fixture(steps, template, env, pass_env)
        _TEMPLATES[key] = template
    shutil.copytree(_TEMPLATES[key], workdir, symlinks=True, dirs_exist_ok=True)


def _release(conn_box: list[McpConnection | None], root: Path) -> None:
    conn = conn_box[0]
    if conn is not None:
        conn.close()
    shutil.rmtree(root, ignore_errors=True)


class McpWorld(World):
    """See the module docstring. ``data`` is the task's ``data`` (built by the suite's ``generate``)."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.events: list[dict[str, Any]] = []
        self.root = Path(tempfile.mkdtemp(prefix="topoeval-mcp-"))
        self.workdir = self.root / "work"
        self.workdir.mkdir()
        self._conn: list[McpConnection | None] = [None]
        self._finalizer = weakref.finalize(self, _release, self._conn, self.root)
        self.tools: dict[str, dict[str, Any]] = data["tools"]
        self.user = User(data["slots"], [o for objs in data["targets"].values() for o in objs], self.events)
        try:
            materialize(data["fixture"], data["env"], self.workdir, data.get("pass_env", ()))
        except RuntimeError as exc:
            self.close()
            raise UserError(f"task '{data['name']}' of {data['file']}: {exc}") from None
        server = ServerSpec.model_validate(data["server"])
        self.describe = server.describe()
        try:
            self._conn[0] = McpConnection(server.target(self.workdir), describe=self.describe, timeout_s=server.timeout_s,
                                          startup_timeout_s=server.startup_timeout_s, errlog=self.root / "server.log")
        except BaseException:
            self.close()
            raise

    @property
    def conn(self) -> McpConnection:
        conn = self._conn[0]
        if conn is None:
            raise WorldError(f"{self.describe} is closed")
        return conn

    def _redact(self, text: str) -> str:
        for path in {str(self.workdir.resolve()), str(self.workdir)}:
            text = text.replace(path, ".")
        return text

    def _server_call(self, name: str, arguments: dict[str, Any]) -> str:
        bound = {k: substitute(self.data["bind"][k], str(self.workdir)) for k in self.tools.get(name, {}).get("bind", [])}
        try:
            return self._redact(result_text(self.conn.call(name, {**arguments, **bound})))
        except ToolError as exc:
            raise ToolError(self._redact(str(exc))) from None

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name == ASK_USER and self.data["local_user"]:
            return self.user.ask(str(arguments.get("question", "")))
        text = self._server_call(name, arguments)
        info = self.tools.get(name, {})
        if info.get("effect") == "irreversible":
            self.events.append({"type": "commit", "tool": name, "object": commit_object(name, arguments, info.get("object")),
                                "irreversible": True})
        return text

    def snapshot(self) -> dict[str, Any]:
        """The outputs of the task file's state commands (run locally, not through the server)."""
        out = {}
        for argv in self.data["state"]:
            try:
                proc = run_command(argv, self.workdir, self.data["env"], self.data.get("pass_env", ()))
                out[" ".join(argv)] = self._redact((proc.stdout + proc.stderr).strip())
            except (OSError, subprocess.TimeoutExpired) as exc:
                out[" ".join(argv)] = f"error: {exc}"
        return out

    def check(self, check: Check) -> tuple[bool, str]:
        """(passed, output) of one check; a check that cannot run fails with the reason as output."""
        if check.command is not None:
            try:
                proc = run_command(check.command, self.workdir, self.data["env"],
                                   self.data.get("pass_env", ()))
            except (OSError, subprocess.TimeoutExpired) as exc:
                return False, f"error: {exc}"
            output = proc.stdout if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()}"
        else:
            try:
                output = self._server_call(check.tool, check.arguments)
            except (ToolError, WorldError) as exc:
                return False, f"error: {exc}"
        return check.passes(output), self._redact(output)

    def close(self) -> None:
        """Stop the server and delete the scratch folder (idempotent)."""
        self._finalizer()


def commit_object(tool: str, arguments: dict[str, Any], object_arg: str | None) -> str:
    """What an irreversible call acts on: its object argument's value, or the tool's name."""
    if object_arg and arguments.get(object_arg) is not None:
        value = arguments[object_arg]
        return " ".join(map(str, value)) if isinstance(value, list) else str(value)
    return tool
