"""Pluggable tool-call formats: how a model is addressed with tools and how its calls are read.

| format | the model sees | it calls with |
|---|---|---|
| ``native`` | function calling (tools sent as ``tools``) | structured ``tool_calls`` |
| ``hermes`` | tools as JSON lines, results in ``<tool_response>`` | ``<tool_call>{json}</tool_call>`` |
| ``search-r1`` | Search-R1's instruction, results in ``<information>`` | ``<search> q </search>``, ``<answer>`` |
| ``react`` | tools listed, ``Observation:`` results | ``Action:`` + ``Action Input:`` |
| ``json`` | tools as JSON lines, results as JSON | a JSON call object, or a list of them |

A model takes one with ``--tool-format NAME`` or a ``MODEL@NAME`` spec (``smollm2-135m@json``); the
default is the backend's own (native function calling, or ``hermes`` where it has none). Other
packages add formats through the ``topoeval.formats`` entry-point group (``name = "module:Class"``),
or in-process with :func:`register_format`.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from topoeval.core.errors import UserError
from topoeval.formats.base import ToolFormat, strip_think
from topoeval.formats.hermes import HermesFormat
from topoeval.formats.json_format import JsonFormat
from topoeval.formats.native import NativeFormat
from topoeval.formats.react import ReactFormat
from topoeval.formats.search_r1 import SearchR1Format

__all__ = ["ENTRY_POINT_GROUP", "ToolFormat", "default_format", "get_format", "known_formats", "register_format",
           "resolve_format", "split_format", "strip_think", "suite_format"]

ENTRY_POINT_GROUP = "topoeval.formats"
#: the shipped formats; the entry-point group adds others (a shipped name cannot be replaced)
_BUILTIN: dict[str, type[ToolFormat]] = {f.name: f for f in (NativeFormat, HermesFormat, SearchR1Format, ReactFormat,
                                                               JsonFormat)}
_REGISTERED: dict[str, type[ToolFormat]] = {}


def register_format(cls: type[ToolFormat]) -> type[ToolFormat]:
    """Register a format class under its ``name`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, ToolFormat)) or not cls.name:
        raise UserError(f"a tool format must be a ToolFormat subclass with a name, not {cls!r}")
    if cls.name in _BUILTIN and _BUILTIN[cls.name] is not cls:
        raise UserError(f"tool format '{cls.name}' is a shipped one; give yours another name")
    _REGISTERED[cls.name] = cls
    return cls


def _from_entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in _BUILTIN}


def known_formats() -> list[str]:
    """Every format name: shipped, registered, and those of the ``topoeval.formats`` entry points."""
    return sorted({*_BUILTIN, *_REGISTERED, *_from_entry_points()})


def get_format(name: str) -> ToolFormat:
    """A fresh instance of the named format (one-line error for an unknown name or a broken plug-in)."""
    cls = _BUILTIN.get(name) or _REGISTERED.get(name)
    if cls is None:
        ep = _from_entry_points().get(name)
        if ep is None:
            raise UserError(f"unknown tool format '{name}'; known: {', '.join(known_formats())}")
        try:
            cls = ep.load()
        except Exception as exc:
            raise UserError(f"tool format '{name}' ({ep.value}) could not be loaded: "
                            f"{type(exc).__name__}: {exc}") from None
        if not (isinstance(cls, type) and issubclass(cls, ToolFormat)):
            raise UserError(f"tool format '{name}' ({ep.value}) is not a ToolFormat subclass")
        _REGISTERED[name] = cls
    return cls()


def split_format(spec: str) -> tuple[str, str | None]:
    """``MODEL@FORMAT`` -> (MODEL, FORMAT); the suffix counts only when it names a known format, so
    model names with an ``@`` of their own (``vertex_ai/claude@20240620``) pass unchanged."""
    model, sep, suffix = spec.rpartition("@")
    if sep and model and suffix in known_formats():
        return model, suffix
    return spec, None


def suite_format(suite: object) -> str | None:
    """The format a topology's ``tool_format`` transform (a format-shift ladder step) sets, or None:
    looked up through the suite's wrappers (each transform wraps the one before in ``.inner``)."""
    seen = 0
    while suite is not None and seen < 64:
        value = getattr(suite, "tool_format", None)
        if isinstance(value, str):
            return value
        suite, seen = getattr(suite, "inner", None), seen + 1
    return None


def resolve_format(tool_format: str | None, tool_mode: str, default_mode: str) -> ToolFormat:
    """The format a backend uses: ``tool_format`` when given (it must agree with an explicit ``tool_mode``),
    else native or hermes as ``tool_mode`` (``auto``: the backend's ``default_mode``) says."""
    if tool_format is None:
        return get_format("native" if (default_mode if tool_mode == "auto" else tool_mode) == "native" else "hermes")
    fmt = get_format(tool_format)
    if tool_mode != "auto" and (tool_mode == "native") != fmt.native:
        raise UserError(f"--tool-mode {tool_mode} contradicts --tool-format {tool_format} "
                        f"({'a function-calling' if fmt.native else 'a prompt'} format); give one of them")
    return fmt


def default_format(default_mode: str) -> str:
    """The format name a backend uses when nothing is chosen (its name carries no @FORMAT)."""
    return "native" if default_mode == "native" else "hermes"
