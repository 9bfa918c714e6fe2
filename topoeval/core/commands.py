"""What a protocol file may run, and the environment the commands it runs get.

A protocol can name commands: an MCP server's ``command`` (or a module whose factory is imported,
``object``), fixture ``run:`` steps, state and check commands of its task file. Two rules:

- **Nothing runs from a file you only asked to check.** ``topoeval validate`` reads a protocol that
  is not a shipped one inside :func:`commands_refused`: each place that would start a server,
  run a command or import a module calls :func:`guard` first, which records what it would run
  and raises :class:`CommandsRefused` instead (validate then says so in one line; its
  ``--allow-commands`` lifts the rule). Everywhere else — ``topoeval run`` of a protocol you name,
  a shipped protocol, the OpenEnv server's protocols named by its operator — naming the protocol
  is the decision to run it.
- **No key leaves with a command.** A command gets :func:`command_env`: only the variables of
  :data:`BASE_ENV` (the path, the home folder, the locale, temporary folders, Python's own) and
  those the protocol names in a ``pass_env`` list, plus the values it sets itself (``env``).
  ``OPENAI_API_KEY``, ``HF_TOKEN``, ``AWS_*`` and every other variable stay behind unless named.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from topoeval.core.errors import UserError

#: The variables every command a protocol runs gets (when set): nothing that holds a credential.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
            "LC_MESSAGES", "TZ", "TMPDIR", "TEMP", "TMP", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONUTF8",
            "PYTHONIOENCODING", "LD_LIBRARY_PATH", "SYSTEMROOT")

#: None: commands run; a list: nothing runs, and what would have run is appended to it
_REFUSED: ContextVar[list[str] | None] = ContextVar("topoeval_commands_refused", default=None)


class CommandsRefused(UserError):
    """A protocol being checked would run something (see :func:`guard`)."""


@contextmanager
def commands_refused() -> Iterator[list[str]]:
    """Within: nothing a protocol names is run; the list gets one description per refusal."""
    refused: list[str] = []
    token = _REFUSED.set(refused)
    try:
        yield refused
    finally:
        _REFUSED.reset(token)


@contextmanager
def commands_allowed() -> Iterator[None]:
    """Within: commands run again (what topoeval itself ships, e.g. a suite's default server)."""
    token = _REFUSED.set(None)
    try:
        yield
    finally:
        _REFUSED.reset(token)


def guard(what: str) -> None:
    """Call before running ``what`` (e.g. "command 'git init'"): raises :class:`CommandsRefused`
    inside :func:`commands_refused`, else returns."""
    refused = _REFUSED.get()
    if refused is None:
        return
    refused.append(what)
    raise CommandsRefused(f"not run: {what} (validate runs nothing a protocol names unless --allow-commands)")


def command_env(pass_env: Iterable[str] = (), env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command a protocol runs: :data:`BASE_ENV` and ``pass_env`` from this
    process's environment (those set), then ``env``'s values."""
    names = [*BASE_ENV, *pass_env]
    return {**{n: os.environ[n] for n in names if n in os.environ}, **(env or {})}
