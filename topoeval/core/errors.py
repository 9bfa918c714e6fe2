"""Errors a user can cause: the CLI prints them as one line, never as a traceback."""

from __future__ import annotations

import difflib


class UserError(Exception):
    """A mistake in user input (protocol, model name, path, ...); the message is shown as is."""

    exit_code = 2


class ProtocolErrors(UserError):
    """One or more protocol problems, each already formatted as 'file:line path: message'."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


def did_you_mean(name: str, known: list[str]) -> str:
    """' (did you mean 'x'?)' when a close match exists, else ''."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
