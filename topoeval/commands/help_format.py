"""Help rendering that reads the same under every typer the project supports (pyproject: >=0.15.4,<0.30).

typer 0.2x's rich help prints each flag's type beside it (``--help <bool>``, ``--cache --no-cache
<bool>``), though a flag takes no value; older typer prints nothing there. :func:`plain_flags` makes
every typer print nothing for a flag, and leaves an option that takes a value as it is.
"""

from __future__ import annotations

from typing import Any


def plain_flags() -> None:
    """Show no type beside a flag in rich help (idempotent; a no-op on a typer without the hook)."""
    import typer.core

    option: Any = getattr(typer.core, "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "plain_flags", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich.plain_flags = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich
