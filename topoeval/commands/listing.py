"""``topoeval suites`` and ``topoeval protocols``: what a protocol can name, and the shipped protocols."""

from __future__ import annotations

from topoeval.commands.common import SuitesDir, rich_console
from topoeval.core.errors import UserError


def suites(suites_dir: SuitesDir = None) -> None:
    """List suites with their tools and topology descriptors."""
    from rich.markup import escape
    from rich.table import Table

    from topoeval.protocol.discovery import SuiteRegistry

    registry = SuiteRegistry(suites_dir or ())
    table = Table("suite", "tools", "state", "reversibility", "user", "ordering", "dependency", "answer",
                  "instructions")
    for name in registry.names():
        s = registry.get(name)
        t = s.manifest.topology
        tools = ", ".join(f"{x.name}[{x.effect.value[0]}]" for x in s.tools)
        if len(s.tools) > 12:  # a bridged world with many tools: counts per effect
            counts = {e: sum(1 for x in s.tools if x.effect.value == e) for e in ("read", "write", "irreversible")}
            tools = f"{len(s.tools)} tools: " + ", ".join(f"{n} [{e[0]}]" for e, n in counts.items())
        table.add_row(name, escape(tools) or "(none: see its description)", t.state, t.reversibility, t.user,
                      t.ordering, t.dependency, t.answer_channel, t.instructions)
    rich_console().print(table)
    rich_console().print("[dim]tool effects: \\[r]ead, \\[w]rite, \\[i]rreversible[/dim]")


def protocols() -> None:
    """List the shipped protocols (one that needs an extra not installed is listed with its install command)."""
    import yaml
    from rich.markup import escape
    from rich.table import Table

    from topoeval.protocol.discovery import protocol_names, resolve_protocol_path
    from topoeval.protocol.loader import load_protocol

    table = Table("protocol", "train", "test (role)", "description")
    for name in protocol_names():
        try:
            p = load_protocol(name)
        except UserError as exc:  # e.g. a bridged world whose extra is missing: the file as written, and why
            raw = yaml.safe_load(resolve_protocol_path(name).read_text(encoding="utf-8")) or {}
            tests = ", ".join(f"{t.get('name')} ({t.get('role')})" for t in raw.get("test") or []) or ", ".join(
                str(t.get("name")) for t in (raw.get("matrix") or {}).get("topologies") or [])
            reason = str(exc).splitlines()[0].split(": ", 1)[-1]
            table.add_row(name, (raw.get("train") or {}).get("name", ""), tests,
                          f"[yellow]not available here: {escape(reason)}[/yellow]\n"
                          f"{escape(raw.get('description', ''))}")
            continue
        if p.matrix is not None:  # a transfer matrix: every model on every topology, no single train one
            table.add_row(name, "(matrix)", ", ".join(t.name for t in p.matrix.topologies), p.description)
            continue
        tests = ", ".join(f"{t.name} ({t.role})" for t in p.test)
        table.add_row(name, p.train.name if p.train else "", tests, p.description)
    rich_console().print(table)
