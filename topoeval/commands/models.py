"""``topoeval models``: every model topoeval can run, by name or by form, and the tool-call formats."""

from __future__ import annotations

import sys


def catalogue() -> list[tuple[str, str, str]]:
    """(name or form, kind, what it is) for every model topoeval runs: reference policies, the embedded
    base, every shipped or registered adapter, then the forms that take a name or path."""
    from topoeval.models.adapters import adapter_files, known_adapters
    from topoeval.policies.oracle import VARIANTS
    from topoeval.policies.registry import EMBEDDED, FORMS, known_models

    what = {"oracle": "solves every task (the ceiling)", "noop": "does nothing (the floor)",
            "random": "random valid calls", "oracle-quit-early": "the oracle, stopping halfway without committing"}
    rows = [(m, "reference", what.get(m, f"the oracle with one flaw ({m.removeprefix('oracle-')})"
                                       if m in VARIANTS else "reference policy")) for m in known_models()]
    rows.append((EMBEDDED, "embedded", "SmolLM2-135M-Instruct GGUF, in a llama-server process topoeval runs"))
    for name in known_adapters():
        rows.append((name, "adapter", f"{EMBEDDED} + LoRA adapter ({adapter_files(name)[0].parent})"))
    rows += [(form, "form", text) for form, text in FORMS.items()]
    return rows


def formats() -> list[tuple[str, str]]:
    """(name, description) of every tool-call format: shipped, registered and plug-ins'."""
    from topoeval.core.errors import UserError
    from topoeval.formats import get_format, known_formats

    out = []
    for name in known_formats():
        try:
            fmt = get_format(name)
            out.append((name, fmt.description or ("function calling" if fmt.native else "prompt format")))
        except UserError as exc:  # a plug-in that does not load: listed, with why
            out.append((name, f"not loadable here: {exc}"))
    return out


def models() -> None:
    """List every model topoeval can run (reference policies, the embedded model and its adapters, the
    forms that take your own) and the tool-call formats (--tool-format NAME or MODEL@NAME)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=200)
    table = Table("model", "kind", "what")
    for name, kind, text in catalogue():
        table.add_row(escape(name), kind, escape(text))
    console.print(table)
    fmt_table = Table("tool format", "what (--tool-format NAME, or MODEL@NAME)")
    for name, text in formats():
        fmt_table.add_row(escape(name), escape(text))
    console.print(fmt_table)
