"""The arguments every transform takes, as typed models (names, types, ranges, a docstring each).

A protocol's ``transforms: [{name: ..., args: {...}}]`` is checked against these when it loads
(:func:`parse_transform_args`, called by :mod:`topoeval.protocol.loader` and by
:func:`topoeval.transforms.apply_transforms`): an unknown argument, a wrong type or a value out of
range is one line with the YAML line and the field path, never a silent default.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from topoeval.core.errors import UserError

#: How many distractor tools ``distractor_tools`` can add (the size of its fixed list of read-only tools).
MAX_DISTRACTORS = 6


class TransformArgs(BaseModel):
    """Arguments of one transform; unknown keys are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoArgs(TransformArgs):
    """A transform that takes no arguments (``merge_hold_pay``, ``refundable``, ``batch_api``, ...)."""


class SeedArgs(TransformArgs):
    """A seeded transform (``rename_tools``, ``rename_args``, ``shuffle_priority``)."""

    seed: int = Field(default=0, ge=0, strict=True,
                      description="Seed of the draw (the same seed gives the same topology).")


class DistractorArgs(TransformArgs):
    """``distractor_tools``: how many read-only tools no task needs are added."""

    n: int = Field(default=2, ge=1, le=MAX_DISTRACTORS, strict=True,
                   description=f"Number of distractor tools to add (1 to {MAX_DISTRACTORS}).")


class HideSlotsArgs(TransformArgs):
    """``hide_slots``: which task facts move behind the user."""

    slots: list[str] = Field(min_length=1, strict=True, description=(
        "Names of the task facts the user holds back until asked (the suite's ``hide`` parameter checks them)."))


class ToolFormatArgs(TransformArgs):
    """``tool_format``: the tool-call format the model is addressed in."""

    format: str = Field(strict=True, description="A tool-call format name (native, hermes, json, react, ...).")

    @field_validator("format")
    @classmethod
    def _known_format(cls, name: str) -> str:
        from topoeval.core.errors import did_you_mean
        from topoeval.formats import known_formats

        known = known_formats()
        if name not in known:
            hint = did_you_mean(name, known) or f" (known: {', '.join(known)})"
            raise ValueError(f"unknown format '{name}'{hint}")
        return name


def arg_errors(model: type[TransformArgs], args: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Each problem of ``args`` against ``model`` as (path inside args, message); [] when they are valid."""
    from topoeval.core.errors import did_you_mean

    try:
        model.model_validate(args)
    except ValidationError as exc:
        out: list[tuple[tuple[str | int, ...], str]] = []
        allowed = sorted(model.model_fields)
        for e in exc.errors():
            loc = tuple(e["loc"])
            if e["type"] == "extra_forbidden":
                key = str(loc[-1]) if loc else ""
                hint = did_you_mean(key, allowed) or (
                    f" (it takes: {', '.join(allowed)})" if allowed else " (it takes no arguments)")
                out.append((loc, f"unknown argument '{key}'{hint}"))
            elif e["type"] == "missing":
                out.append((loc, "required argument is missing"))
            else:
                msg = e["msg"]
                out.append((loc, msg[len("Value error, "):] if msg.startswith("Value error, ") else msg))
        return out
    return []


def parse_transform_args(name: str, model: type[TransformArgs], args: Any) -> TransformArgs:
    """``args`` as ``model``; a one-line UserError naming the transform and the argument otherwise."""
    problems = arg_errors(model, args)
    if problems:
        loc, msg = problems[0]
        where = ".".join(str(p) for p in loc)
        raise UserError(f"transform '{name}'{' argument ' + where if where else ''}: {msg}")
    return model.model_validate(args)
