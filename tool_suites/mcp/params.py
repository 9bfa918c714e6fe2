"""The parameters of an ``mcp`` topology: which server, which task file, which overlay.

Relative paths are looked up in the protocol file's folder (the current folder for a topology not
loaded from a protocol file), then in this suite's folder (where the shipped
example lives), wherever the suite is installed: ``tool_suites/mcp/git/tasks.yaml``, as the shipped
protocols spell it (the repository's layout), names ``git/tasks.yaml`` of this folder. With no parameters at all the topology is the shipped
example: ``mcp-server-git`` served in-process on ``git/tasks.yaml`` with ``git/overlay.yaml``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PrivateAttr, model_serializer, model_validator

from topoeval.core.commands import command_env, guard
from topoeval.core.errors import UserError
from topoeval.core.paths import current_protocol_folder, relative_base

from .annotations import Overlay, load_overlay
from .taskfile import TaskFile, load_task_file

SUITE_DIR = Path(__file__).resolve().parent
#: how the repository's layout spells this folder (the shipped protocols' parameters use it)
REPO_SPELLING = Path("tool_suites", "mcp")
EXAMPLE = {
    "server": {"object": "mcp_server_git.server:create_server", "kwargs": {"repository": "{workdir}"}},
    "tasks": "git/tasks.yaml",
    "overlay": "git/overlay.yaml",
}


class ServerSpec(BaseModel):
    """How to start a fresh server for one episode: a stdio command, or an in-process factory."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] | None = Field(
        default=None, min_length=1,
        description="Command of a stdio server; '{python}' is this interpreter, '{workdir}' the episode's scratch folder.",
    )
    object: str | None = Field(
        default=None, description="'module:function' returning a fresh in-process server (an mcp Server or MCPServer).")
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="Keyword arguments of the factory: '{workdir}' in strings is substituted; a value that is exactly "
        "'{workdir}' is passed as a pathlib.Path.",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment of a stdio server.")
    pass_env: list[str] = Field(default_factory=list, description=(
        "Variables of topoeval's own environment a stdio server gets besides the base set (PATH, HOME, the "
        "locale, ...: topoeval.core.commands.BASE_ENV), e.g. [GITHUB_TOKEN]; nothing else is passed."))
    timeout_s: PositiveFloat = Field(default=30.0, description="Seconds one tool call may take.")
    startup_timeout_s: PositiveFloat = Field(default=60.0, description="Seconds the server may take to start.")

    @model_validator(mode="after")
    def _one_kind(self) -> "ServerSpec":
        if (self.command is None) == (self.object is None):
            raise ValueError("give exactly one of 'command' (a stdio server) or 'object' (an in-process factory)")
        if self.object is not None and ":" not in self.object:
            raise ValueError(f"object '{self.object}' must be 'module:function'")
        return self

    @model_serializer(mode="wrap")
    def _unset_pass_env_left_out(self, handler: Any) -> dict[str, Any]:
        """Leave pass_env out while empty (a task's data holds this dump: its hash stays as before)."""
        data = handler(self)
        if isinstance(data, dict) and not data.get("pass_env"):
            data.pop("pass_env", None)
        return data

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "in-process"

    def describe(self) -> str:
        return f"MCP server '{' '.join(self.command)}'" if self.command else f"in-process MCP server {self.object}"

    def target(self, workdir: Path) -> Any:
        """What ``mcp.Client`` takes for one episode whose scratch folder is ``workdir``."""
        from .connection import require_mcp

        require_mcp()
        from mcp import StdioServerParameters
        from mcp.server.lowlevel import Server
        from mcp.server.mcpserver import MCPServer

        from .taskfile import substitute

        if self.command:
            guard(f"MCP server command '{' '.join(self.command)}'")
            argv = [sys.executable if a == "{python}" else substitute(a, str(workdir)) for a in self.command]
            return StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(workdir),
                                         env=command_env(self.pass_env, substitute(self.env, str(workdir))))
        module, _, name = self.object.partition(":")
        guard(f"import of module '{module}' (MCP server object '{self.object}')")
        try:
            factory = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise UserError(f"MCP server object '{self.object}' cannot be loaded: {exc}") from None
        if isinstance(factory, (Server, MCPServer)):
            raise UserError(f"'{self.object}' is a server instance: episodes must not share a server; "
                            "name a function that returns a fresh one")
        kwargs = {k: workdir if v == "{workdir}" else substitute(v, str(workdir)) for k, v in self.kwargs.items()}
        root = logging.getLogger()
        level, handlers = root.level, list(root.handlers)
        try:
            server = factory(**kwargs)
        finally:  # MCPServer() configures the root logger (INFO, a rich handler): not in our process
            root.setLevel(level)
            root.handlers[:] = handlers
        if not isinstance(server, (Server, MCPServer)):
            raise UserError(f"'{self.object}' returned {type(server).__name__}, not an mcp Server or MCPServer")
        return server


def find_file(given: str, folder: Path | None = None) -> Path:
    """A parameter path: absolute, or relative to the protocol file's folder (``folder``; the
    current folder for a topology not loaded from a file), then to this suite's folder."""
    p = Path(given)
    own = SUITE_DIR / p.relative_to(REPO_SPELLING) if p.is_relative_to(REPO_SPELLING) else SUITE_DIR / p
    base = relative_base(folder)
    for candidate in ([p] if p.is_absolute() else [base / p, own]):
        if candidate.is_file():
            return candidate
    where = "" if p.is_absolute() else f" (looked in {base}{'' if folder is None else ', the protocol’s folder'})"
    raise ValueError(f"no such file: {given}{where}")


class McpParams(BaseModel):
    """Parameters of an ``mcp`` topology (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    server: ServerSpec = Field(description="The server started fresh for every episode.")
    tasks: str = Field(description="Task file (YAML, or JSON Lines of tasks).")
    overlay: str | None = Field(default=None, description="Annotation overlay (YAML).")

    @model_validator(mode="before")
    @classmethod
    def _example_by_default(cls, raw: Any) -> Any:
        if not raw:
            return dict(EXAMPLE)
        if isinstance(raw, dict) and "server" in raw and "tasks" not in raw:
            raise ValueError("'tasks' is required with 'server' (the task file for that server)")
        if isinstance(raw, dict) and "server" not in raw:
            raise ValueError("'server' is required (a stdio command or an in-process factory)")
        return raw

    #: the protocol file's folder, where relative paths are read from (None: the current folder)
    _folder: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _files_readable(self) -> "McpParams":
        self._folder = current_protocol_folder()
        load_task_file(find_file(self.tasks, self._folder))
        if self.overlay is not None:
            load_overlay(find_file(self.overlay, self._folder))
        return self

    def task_path(self) -> Path:
        return find_file(self.tasks, self._folder)

    def task_file(self) -> TaskFile:
        return load_task_file(self.task_path())

    def overlay_file(self) -> Overlay:
        return load_overlay(find_file(self.overlay, self._folder) if self.overlay else None)
