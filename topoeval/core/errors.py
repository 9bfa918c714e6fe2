"""Errors a user can cause: the CLI prints them as one line, never as a traceback."""


class UserError(Exception):
    """A mistake in user input (protocol, model name, path, ...); the message is shown as is."""

    exit_code = 2


class ProtocolErrors(UserError):
    """One or more protocol problems, each already formatted as 'file:line path: message'."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))
