"""Spellings the CLI no longer takes (one name per idea across commands, nothing was released): each
is refused before typer parses anything, in one line with what to write instead."""

from __future__ import annotations

from topoeval.core.errors import UserError

#: command -> {old option: what replaces it}
RENAMED: dict[str, dict[str, str]] = {
    "export": {"--n": "--tasks"},
    "train": {"--n": "--tasks"},
    "sensitivity": {"--protocol": "PROTOCOL, the first argument (topoeval sensitivity wiki_to_travel)"},
    "serve-openenv": {"--protocol": "PROTOCOL, the first argument (topoeval serve-openenv wiki_to_travel), "
                                  "or --allow-protocol for another protocol a reset may name"},
}


def check_spellings(argv: list[str]) -> None:
    """Raise a one-line UserError when ``argv`` (the arguments after ``topoeval``) uses an old spelling."""
    command = next((a for a in argv if not a.startswith("-")), None)
    renamed = RENAMED.get(command or "", {})
    for arg in argv:
        old = arg.split("=", 1)[0]
        if old in renamed:
            raise UserError(f"topoeval {command} {old} is spelled differently now: did you mean {renamed[old]}?")
