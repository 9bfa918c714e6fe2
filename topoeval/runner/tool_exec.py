"""Validating and executing one tool call. Nothing here raises for bad model output.

Every call ends in a :class:`CallRecord` with a status:

- ``ok`` — executed; ``observation`` holds the world's answer;
- ``invalid`` — unknown tool, arguments that are not a JSON object, nest deeper than
  ``reply_limits.max_argument_depth``, or violate the schema; the world never sees it (counted in ``invalid_calls``);
- ``tool_error`` — valid, but the world refused it (unknown id, ...);
- ``crash`` — the suite's own code raised; recorded so a suite bug cannot kill a run.

A :class:`~topoeval.core.suite.WorldError` (the world's backend failed) is raised on to the
episode, which records the call as a ``tool_error`` and ends with status ``error``.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from pydantic import BaseModel, Field

from topoeval.core.messages import ToolCall
from topoeval.core.replies import ReplyLimits, nesting_depth
from topoeval.core.suite import ToolError, ToolSpec, World, WorldError

DEFAULT_LIMITS = ReplyLimits()


class CallRecord(BaseModel):
    """One tool call as executed (or refused) in an episode."""

    turn: int = Field(description="Index of the assistant turn that made the call.")
    id: str = Field(description="Call id.")
    name: str = Field(description="Tool name as emitted.")
    raw_arguments: str = Field(description="Arguments exactly as emitted.")
    arguments: dict[str, Any] | None = Field(default=None, description="Parsed arguments when valid JSON.")
    status: str = Field(description="ok | invalid | tool_error | crash | skipped.")
    error: str | None = Field(default=None, description="Why the call failed.")
    observation: Any = Field(default=None, description="World's answer for ok calls.")
    effect: str | None = Field(default=None, description="read | write | irreversible (known tools).")
    state_changed: bool = Field(default=False, description="Whether the world snapshot changed.")


_VALIDATORS: dict[int, tuple[ToolSpec, jsonschema.Draft202012Validator]] = {}


def _validator(spec: ToolSpec) -> jsonschema.Draft202012Validator:
    """The JSON-schema validator of a tool spec, built once per spec object."""
    hit = _VALIDATORS.get(id(spec))
    if hit is None or hit[0] is not spec:
        hit = _VALIDATORS[id(spec)] = (spec, jsonschema.Draft202012Validator(spec.parameters))
    return hit[1]


def parse_arguments(raw: str, max_depth: int = DEFAULT_LIMITS.max_argument_depth,
                    ) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) or (None, why not). Arguments nested deeper than ``max_depth`` are refused
    before they are parsed (nothing downstream meets a value deeper than that)."""
    if raw and raw.count("[") + raw.count("{") > max_depth and (depth := nesting_depth(raw)) > max_depth:
        return None, (f"arguments nest {depth} deep, more than the limit of {max_depth} "
                      "(reply_limits.max_argument_depth)")
    try:
        args = json.loads(raw) if raw and raw.strip() else {}
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON: {exc.msg}"
    except (RecursionError, ValueError) as exc:
        return None, f"arguments could not be read: {type(exc).__name__}"
    if not isinstance(args, dict):
        return None, f"arguments must be a JSON object, got {type(args).__name__}"
    return args, None


def execute_call(call: ToolCall, turn: int, tools: dict[str, ToolSpec], world: World,
                 max_depth: int = DEFAULT_LIMITS.max_argument_depth) -> CallRecord:
    """Validate ``call`` against its tool's schema, then run it in ``world``."""
    rec = CallRecord(turn=turn, id=call.id, name=call.name, raw_arguments=call.arguments, status="ok")
    spec = tools.get(call.name)
    if spec is None:
        rec.status, rec.error = "invalid", f"unknown tool '{call.name}' (available: {', '.join(sorted(tools))})"
        return rec
    rec.effect = spec.effect.value
    args, err = parse_arguments(call.arguments, max_depth)
    if err or args is None:
        rec.status, rec.error = "invalid", err
        return rec
    rec.arguments = args
    validator = _validator(spec)
    try:
        problem = None if validator.is_valid(args) else min(validator.iter_errors(args), key=str)
    except RecursionError:  # a schema check that recursed too deep: the arguments are refused, not the run
        rec.status, rec.error = "invalid", "arguments could not be checked against the schema (nested too deep)"
        return rec
    if problem is not None:
        where = ".".join(str(p) for p in problem.absolute_path) or "arguments"
        rec.status, rec.error = "invalid", f"{where}: {problem.message}"
        return rec
    before = world.snapshot() if spec.effect.value != "read" else None
    try:
        rec.observation = world.call(call.name, args)
    except ToolError as exc:
        rec.status, rec.error = "tool_error", str(exc)
    except WorldError:
        raise
    except Exception as exc:  # a suite bug: record it, keep the run alive
        rec.status, rec.error = "crash", f"{type(exc).__name__}: {exc}"
    if before is not None:
        rec.state_changed = world.snapshot() != before
    return rec


def observation_text(rec: CallRecord) -> str:
    """What the model reads back for this call."""
    if rec.status != "ok":
        return json.dumps({"error": rec.error}, ensure_ascii=False)
    obs = rec.observation
    return obs if isinstance(obs, str) else json.dumps(obs, ensure_ascii=False)
