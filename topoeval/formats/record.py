"""What run.json and summary.json record of a run's tool-call formats."""

from __future__ import annotations

from typing import Any

from topoeval.formats import suite_format


def format_record(policies: list[Any], topologies: list[Any]) -> dict[str, dict[str, str]]:
    """``models``: each model's own format (reference policies have none); ``topologies``: the format a
    topology's ``tool_format`` transform addresses every model in instead (format-shift steps)."""
    models = {p.name: p.tool_format for p in policies if getattr(p, "tool_format", None)}
    shifted = {t.name: suite_format(t.suite) for t in topologies if suite_format(t.suite)}
    return {"models": models, "topologies": shifted}
