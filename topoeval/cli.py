"""The ``topoeval`` command line (typer): the commands' registrations, in ``--help``'s order, and the entry
point. Each command's body is a module under :mod:`topoeval.commands`. User errors end in one line and exit
code 2."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import typer

from topoeval.commands.export import export
from topoeval.commands.help_format import plain_flags
from topoeval.commands.listing import protocols, suites
from topoeval.commands.models import models
from topoeval.commands.publish import publish
from topoeval.commands.report import compare, report
from topoeval.commands.run import EXIT_EPISODE_ERRORS, merge, run
from topoeval.commands.sensitivity import sensitivity
from topoeval.commands.serve import serve_mcp, serve_model, serve_openenv
from topoeval.commands.spellings import check_spellings
from topoeval.commands.sweep import sweep
from topoeval.commands.train import train
from topoeval.commands.user_agreement import user_agreement
from topoeval.commands.validate import validate
from topoeval.commands.view import view
from topoeval.core.errors import ProtocolErrors, UserError
from topoeval.core.secrets import mask_secrets

__all__ = ["EXIT_EPISODE_ERRORS", "app", "main"]

plain_flags()  # `--help`, not `--help <bool>`, under every supported typer
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure how an agent trained on one tool topology generalises to another.",
)



def _version(value: bool) -> None:
    if value:
        from topoeval.core.version import __version__

        typer.echo(f"topoeval {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print topoeval's version and exit.")) -> None:
    """Measure how an agent trained on one tool topology generalises to another."""


app.command("run")(run)
app.command("merge")(merge)
app.command("validate")(validate)
app.command("suites")(suites)
app.command("protocols")(protocols)
app.command("report")(report)
app.command("compare")(compare)
app.command("sensitivity")(sensitivity)
app.command("export")(export)
app.command("train")(train)
app.command("sweep")(sweep)
app.command("models")(models)
app.command("view")(view)
app.command("user-agreement")(user_agreement)
app.command("serve-openenv")(serve_openenv)
app.command("serve-model")(serve_model)
app.command("serve-mcp")(serve_mcp)
app.command("publish")(publish)


def _terminate(signum, frame) -> None:
    """SIGTERM ends a run like Ctrl-C: finished episodes stay on disk, servers are stopped."""
    raise KeyboardInterrupt


def main() -> None:
    """Entry point: one-line errors for user mistakes, resumable message on Ctrl-C or SIGTERM, and a quiet
    exit 0 when the reader of stdout goes away (``topoeval models | head -1``)."""
    stdout_at_start = _fd_identity(1)
    try:
        _main()
        sys.stdout.flush()  # inside the try: a broken pipe at the interpreter's final flush is caught too
    except BrokenPipeError:
        _quiet_broken_pipe()
    except SystemExit as exc:
        # rich (Console.on_broken_pipe) and click (main's EPIPE branch) turn a broken pipe into exit code 1
        if exc.code == 1 and _stdout_reader_gone(stdout_at_start):
            _quiet_broken_pipe()
        raise


def _fd_identity(fd: int) -> tuple[int, int] | None:
    """(device, inode) of what a file descriptor is open on; None when it is closed."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _stdout_reader_gone(stdout_at_start: tuple[int, int] | None) -> bool:
    """Whether stdout's reader has gone: stdout is a pipe whose read end is closed, or something (rich, on a
    broken pipe) has put another file in its place since the start."""
    if _fd_identity(1) != stdout_at_start:
        return True
    import select

    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(1, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _quiet_broken_pipe() -> None:
    """Python's recipe for SIGPIPE (docs: signal, "Note on SIGPIPE"): stdout onto devnull so the interpreter's
    last flush cannot fail again, then exit 0 as a command piped into ``head`` should."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.exit(0)


def _main() -> None:
    """The commands, with one-line errors for user mistakes and a resumable message on Ctrl-C or SIGTERM."""
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    warnings.showwarning = _show_warning
    try:
        check_spellings(sys.argv[1:])
        rc = app(standalone_mode=False)
        if rc == 130:  # typer turns KeyboardInterrupt into exit code 130
            _interrupted()
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except ProtocolErrors as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        sys.exit(exc.exit_code)
    except UserError as exc:
        print(f"error: {mask_secrets(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        _interrupted()
    except _click_exception() as exc:  # usage errors (unknown option, missing argument, bad value)
        exc.show()  # typer's usage line, its --help hint, then "Error: <message>"
        sys.exit(exc.exit_code)


_PYTHON_SHOWWARNING = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """topoeval's own warnings as one line (``warning: ...``), without Python's source line."""
    if category.__module__.startswith("topoeval."):
        print(f"warning: {message}", file=file or sys.stderr)
    else:
        _PYTHON_SHOWWARNING(message, category, filename, lineno, file, line)


def _click_exception() -> type[Any]:
    """The click exception class behind typer's public ``BadParameter`` (typer >= 0.22 runs on its
    own copy of click, older typer on click itself): found from that public class, not by module."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _interrupted() -> None:
    print("interrupted: finished episodes are saved; run the same command again to resume", file=sys.stderr)
    sys.exit(130)
