"""Hints for a ``-m`` name no model form matches (issue 60): the closest runnable name, and — when an
``--api-base`` is given — that a model a server serves is named ``direct:NAME`` (or ``openai/NAME``)."""

from __future__ import annotations

from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.formats import split_format


def matches_a_form(spec: str) -> bool:
    """Whether ``make_policy`` takes ``spec`` (a reference policy, the embedded model or an adapter, a path or a
    prefixed form) rather than ending in its "unknown model" error."""
    from topoeval.models.adapters import is_adapter_model
    from topoeval.policies.registry import EMBEDDED, is_reference

    spec = split_format(spec)[0]
    return (is_reference(spec) or spec == EMBEDDED or is_adapter_model(spec) or spec.startswith(("gguf:", "hf:",
            "direct:")) or spec.endswith(".gguf") or "/" in spec or (Path(spec) / "config.json").is_file())


def unknown_model_line(spec: str, api_base: bool) -> str:
    """The "unknown model" line with a did-you-mean among the runnable names right after the name, and the
    ``direct:`` form at its end when a server is named with ``--api-base``."""
    from topoeval.core.errors import did_you_mean
    from topoeval.policies.registry import runnable_names, unknown_model

    name, fmt = split_format(spec)
    line = unknown_model(name).replace(f"'{name}'", f"'{name}'{did_you_mean(name, runnable_names())}", 1)
    if api_base:
        suffix = f"@{fmt}" if fmt else ""
        line += (f"; to evaluate the model the server at --api-base serves, name it direct:{name}{suffix} "
                 f"(or openai/{name}{suffix})")
    return line


def check_model_names(models: list[str], api_base: bool) -> None:
    """A one-line UserError for the first ``-m`` name no form matches (:func:`unknown_model_line`)."""
    for spec in models:
        if not matches_a_form(spec):
            raise UserError(unknown_model_line(spec, api_base))
