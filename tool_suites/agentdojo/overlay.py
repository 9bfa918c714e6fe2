"""topoeval's annotations over AgentDojo's tools: one YAML file per domain in ``annotations/``.

AgentDojo's tools carry no read/write metadata, so each domain's file gives every tool the
annotations of the suite contract (``effect``, ``idempotent``, ``parallel_safe``,
``needs_confirmation``) plus what the bridge needs to read its calls: the arguments that name the
object a committing call acts on, the free-text arguments that do not identify a call, and the
state fields a ``read`` tool is known to touch (mark-as-read, request logs). A ``why`` line records
the reading of the tool's code behind the annotation. ``dependencies`` overrides, per user task,
the derived dependencies of ground-truth calls where values cannot show them (see :mod:`.dag`).

The tool schemas themselves are never copied here: they come from AgentDojo's own pydantic
parameter models at run time.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from topoeval.core.annotations import ToolAnnotation, load_model_file
from topoeval.core.errors import UserError
from topoeval.core.suite import ToolSpec

ANNOTATIONS = Path(__file__).parent / "annotations"


class AgentDojoTool(ToolAnnotation):
    """topoeval's reading of one AgentDojo tool: the shared annotations (``object``: the arguments
    naming what an irreversible call acts on, compared to the ground truth's) and the bridge's own."""

    creates: str | None = Field(
        default=None,
        description="The argument naming an object the call brings into existence (later calls naming it depend on it).",
    )
    loose_args: list[str] = Field(
        default_factory=list,
        description="Free-text arguments (bodies, search queries) that do not identify the call; left out of gold matching.",
    )
    read_side_effects: list[str] = Field(
        default_factory=list,
        description="State keys (fnmatch patterns over flat snapshot keys) a read tool changes: mark-as-read, request logs.",
    )
    why: str = Field(description="The reading of the tool's code behind these annotations.")

    def object_of(self, arguments: dict[str, Any]) -> str:
        """The object an irreversible call acts on, as one comparable string."""
        parts = []
        for name in self.object:
            value = arguments.get(name)
            if isinstance(value, list):
                value = ",".join(sorted(str(v).strip().lower() for v in value))
            parts.append("" if value is None else str(value).strip().lower())
        return "|".join(parts)


class DomainAnnotations(BaseModel):
    """The annotations file of one AgentDojo domain."""

    model_config = ConfigDict(extra="forbid")

    domain: str = Field(description="AgentDojo domain name.")
    answer_channel: Literal["text", "state"] = Field(
        description="Where most of the domain's default tasks are judged: the answer text, or the world's state "
        "(a test checks it against AgentDojo's checks).",
    )
    tools: dict[str, AgentDojoTool] = Field(description="Every tool of the domain, by name.")
    dependencies: dict[str, dict[int, list[int]]] = Field(
        default_factory=dict,
        description="Per user task, ground-truth call index -> the earlier indices it depends on (replaces the derived ones).",
    )


@lru_cache(maxsize=None)
def load_annotations(domain: str) -> DomainAnnotations:
    return load_model_file(ANNOTATIONS / f"{domain}.yaml", DomainAnnotations)


def tool_specs(functions: list[Any], annotations: DomainAnnotations) -> list[ToolSpec]:
    """ToolSpecs of AgentDojo ``Function`` objects: their own description and parameter schema,
    with the domain's annotations. A tool without an annotation is an error (a new AgentDojo
    version added it: annotate it by reading its code)."""
    missing = [f.name for f in functions if f.name not in annotations.tools]
    if missing:
        raise UserError(f"annotations/{annotations.domain}.yaml has no entry for AgentDojo tool(s) {', '.join(missing)}")
    out = []
    for f in functions:
        a = annotations.tools[f.name]
        schema = f.parameters.model_json_schema()
        schema.pop("title", None)
        out.append(a.spec(f.name, f.description, schema))
    return out
