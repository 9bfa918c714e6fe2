"""From an MCP server's tool listing to topoeval tool specs: hints mapped, an overlay on top.

MCP annotations are untrusted hints with defaults (``readOnlyHint`` false, ``destructiveHint``
true, ``idempotentHint`` false, ``openWorldHint`` true). The mapping:

- ``readOnlyHint`` true -> ``effect: read`` (idempotent, parallel-safe);
- otherwise ``destructiveHint`` (default true) -> ``effect: irreversible``, else ``write``;
  ``idempotentHint`` -> ``idempotent``; writes are not parallel-safe;
- ``needs_confirmation`` is false: MCP has no hint for it.

A tool's ``_meta`` may carry topoeval's own keys (``topoeval/effect``, ``topoeval/idempotent``,
``topoeval/parallel_safe``, ``topoeval/needs_confirmation``, ``topoeval/user_channel`` — what
``topoeval serve-mcp`` sends); they win over the hints. The overlay (YAML, :class:`Overlay`)
wins over both, and can say what MCP cannot: that an additive call cannot be undone (a commit, a
payment), that a call needs the user's confirmation, which argument names what an irreversible
call acts on, which arguments the harness fills (``bind``), and which tools to hide.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from topoeval.core.annotations import ArgNames, load_model_file
from topoeval.core.errors import UserError
from topoeval.core.suite import Effect, ToolSpec

META_PREFIX = "topoeval/"
ASK_USER = "ask_user"


class ToolOverlay(BaseModel):
    """Overrides for one tool; every field left out keeps the mapped value."""

    model_config = ConfigDict(extra="forbid")

    effect: Effect | None = Field(default=None, description="read | write | irreversible.")
    idempotent: bool | None = Field(default=None, description="Calling twice with the same arguments changes nothing more.")
    parallel_safe: bool | None = Field(default=None, description="May run in the same turn as other calls.")
    needs_confirmation: bool | None = Field(
        default=None, description="The user must confirm the call's object (see `object`) before it.")
    description: str | None = Field(default=None, description="Replaces the server's description shown to the model.")
    object: ArgNames = Field(
        default_factory=list, max_length=1,
        description="The argument whose value names what an irreversible call acts on (risk metric, confirmations); "
        "default: the tool's name. The shared annotation field (one name, or a list of one here).",
    )


class Overlay(BaseModel):
    """The annotation overlay file of an MCP topology."""

    model_config = ConfigDict(extra="forbid")

    bind: dict[str, str] = Field(
        default_factory=dict,
        description="Arguments the harness fills on every tool that has them, hidden from the model; '{workdir}' "
        "is the episode's scratch folder (e.g. repo_path: '{workdir}').",
    )
    hide: list[str] = Field(default_factory=list, description="Server tools not offered to the model.")
    tools: dict[str, ToolOverlay] = Field(default_factory=dict, description="Per-tool overrides by tool name.")
    topology: dict[str, Any] = Field(
        default_factory=dict, description="Overrides of the derived topology descriptor (e.g. ordering).")


def load_overlay(path: Path | None) -> Overlay:
    """The overlay at ``path`` (an empty one for None); one-line errors."""
    return Overlay() if path is None else load_model_file(path, Overlay, what=" the overlay", error=ValueError)


def mapped(tool: Any) -> dict[str, Any]:
    """Annotations of one ``mcp.types.Tool`` from its hints and its ``_meta`` (before the overlay)."""
    hints = tool.annotations
    read_only = bool(hints and hints.read_only_hint)
    destructive = True if hints is None or hints.destructive_hint is None else hints.destructive_hint
    idempotent = bool(hints and hints.idempotent_hint)
    out: dict[str, Any] = {
        "effect": Effect.read if read_only else (Effect.irreversible if destructive else Effect.write),
        "idempotent": True if read_only else idempotent,
        "parallel_safe": read_only,
        "needs_confirmation": False,
        "user_channel": False,
    }
    for key, value in (tool.meta or {}).items():
        name = key.removeprefix(META_PREFIX)
        if key.startswith(META_PREFIX) and name in out:
            out[name] = Effect(value) if name == "effect" else bool(value)
    return out


def model_schema(schema: dict[str, Any] | None, bound: set[str]) -> dict[str, Any]:
    """The input schema the model sees: the server's, without the harness-filled arguments."""
    schema = dict(schema or {"type": "object", "properties": {}})
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in bound}
    schema["properties"] = props
    if "required" in schema:
        schema["required"] = [r for r in schema["required"] if r not in bound]
    schema.setdefault("type", "object")
    return schema


def tool_specs(listing: list[Any], overlay: Overlay, *, with_user: bool, source: str) -> tuple[list[ToolSpec], dict[str, str]]:
    """(tool specs offered to the model, object argument per tool) for a server's listing.

    ``with_user`` adds ``ask_user`` (the simulated user). ``source`` names the server in errors.
    """
    names = [t.name for t in listing]
    unknown = sorted((set(overlay.tools) | set(overlay.hide)) - set(names))
    if unknown:
        raise UserError(f"{source}: the overlay names tools the server does not have: {', '.join(unknown)} "
                        f"(it has: {', '.join(names)})")
    bound = set(overlay.bind)
    specs, objects = [], {}
    for tool in listing:
        if tool.name in overlay.hide:
            continue
        ann = mapped(tool)
        over = overlay.tools.get(tool.name, ToolOverlay())
        ann.update({k: v for k, v in over.model_dump(exclude={"description", "object"}).items() if v is not None})
        specs.append(ToolSpec(
            name=tool.name,
            description=over.description or tool.description or tool.title or tool.name,
            parameters=model_schema(tool.input_schema, bound),
            **ann,
        ))
        if over.object:
            objects[tool.name] = over.object[0]
    if with_user and ASK_USER not in names:
        specs.append(ask_user_spec())
    return specs, objects


def ask_user_spec() -> ToolSpec:
    return ToolSpec(
        name=ASK_USER,
        description="Ask the user a question (a detail only they know), or ask them to confirm an action "
        "before you take it (say 'confirm' and quote what you will do).",
        parameters={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"],
                    "additionalProperties": False},
        effect=Effect.read, idempotent=False, parallel_safe=True, user_channel=True,
    )
