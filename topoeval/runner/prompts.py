"""What each topology of a run showed the model, recorded when the run starts: ``prompts.json``.

A reader (the viewer, an export) shows a run's system prompts and tool lists from this file, never by
resolving the protocol that run.json names: resolving a suite may import a module, run a task file's
fixture steps or start an MCP server, and a run folder may come from anyone. :func:`read_prompts`
reads the file only: it opens it without following a symlink, refuses one that is not a regular file
or is larger than :data:`MAX_PROMPTS_BYTES`, and validates it with :class:`RecordedPrompts`; it never
imports a suite, resolves a topology or runs anything. A folder written before prompts.json existed
reads as None (the reader says the prompts were not recorded).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from topoeval.core.files import write_atomic
from topoeval.core.safe_paths import read_regular

if TYPE_CHECKING:
    from topoeval.protocol.topology import ResolvedTopology

#: the file beside run.json that records each topology's system prompt and tool list
PROMPTS_JSON = "prompts.json"
#: a prompts.json larger than this is not read (a run's prompts and tool lists are kilobytes)
MAX_PROMPTS_BYTES = 64 * 1024 * 1024


class TopologyPrompt(BaseModel):
    """What one topology of a run offered the model at the start of every episode."""

    model_config = ConfigDict(extra="forbid")

    system_prompt: str | None = Field(
        description="The system message the suite gave for this topology (None where it was not recorded).")
    tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The tool specs as OpenAI function-calling entries ({'type': 'function', 'function': "
                    "{name, description, parameters}}), in the order the topology offered them (a task may "
                    "withhold some until an instruction adds them).")


class RecordedPrompts(BaseModel):
    """prompts.json: every topology of a run, by name, with what it showed the model."""

    model_config = ConfigDict(extra="forbid")

    format: int = Field(default=1, description="Version of this file's layout (1).")
    topologies: dict[str, TopologyPrompt] = Field(
        description="Each topology of the run (its protocol name) to its system prompt and tool list.")


def prompts_of(topologies: Iterable[ResolvedTopology]) -> RecordedPrompts:
    """The prompts and tool lists of resolved topologies, as a run offers them."""
    return RecordedPrompts(topologies={
        t.name: TopologyPrompt(system_prompt=t.system_prompt(), tools=[spec.openai() for spec in t.suite.tools])
        for t in topologies})


def write_prompts(run_dir: Path, topologies: Iterable[ResolvedTopology] | RecordedPrompts) -> None:
    """Write ``run_dir/prompts.json`` atomically from the run's resolved topologies (or a record)."""
    record = topologies if isinstance(topologies, RecordedPrompts) else prompts_of(topologies)
    write_atomic(Path(run_dir) / PROMPTS_JSON, record.model_dump_json(indent=2) + "\n")


def read_prompts(run_dir: Path) -> RecordedPrompts | None:
    """The run's recorded prompts, or None when prompts.json is absent, not a regular file (a symlink
    is never followed), larger than :data:`MAX_PROMPTS_BYTES`, or not valid. Reads the file only."""
    raw = read_regular(Path(run_dir) / PROMPTS_JSON, MAX_PROMPTS_BYTES)
    if raw is None:
        return None
    try:
        return RecordedPrompts.model_validate_json(raw)
    except (ValidationError, ValueError):
        return None
