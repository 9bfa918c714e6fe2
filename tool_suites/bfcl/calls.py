"""Reading BFCL's ground-truth call strings with ``ast`` — never ``eval``.

A ground-truth call is ``name(arg, key=value, ...)`` with literal arguments only (checked: all
4,625 calls of the four variants are). :func:`parse_call` returns the tool name and its
arguments as keywords, positional ones bound to their parameter names through the signature of
the API method that implements the tool.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from . import data


class CallSyntaxError(ValueError):
    """A call string that is not ``name(literal arguments)``."""


def parse_call(text: str, jsonable: bool = True) -> tuple[str, dict[str, Any]]:
    """``"mv(source='a', destination='b')"`` -> ``("mv", {"source": "a", "destination": "b"})``.

    ``jsonable``: tuples become lists, as the arguments of a JSON tool call would carry them
    (False keeps the literals exactly as written, for the ground-truth twin).
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise CallSyntaxError(f"not a call: {text!r} ({exc.msg})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise CallSyntaxError(f"not a plain function call: {text!r}")
    name = node.func.id
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        raise CallSyntaxError(f"arguments are not literals: {text!r}") from None
    if len(kwargs) != len(node.keywords):
        raise CallSyntaxError(f"**kwargs are not supported: {text!r}")
    if args:
        kwargs = _bind(name, args, kwargs)
    return name, _jsonable(kwargs) if jsonable else kwargs


def _bind(name: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    class_name = data.tool_class(name)
    if class_name is None:
        raise CallSyntaxError(f"positional arguments to an unknown tool '{name}'")
    method = getattr(data.api_class(class_name), name)
    bound = inspect.signature(method).bind(None, *args, **kwargs)  # None stands for self
    return {k: v for k, v in list(bound.arguments.items())[1:]}


def _jsonable(value: Any) -> Any:
    """Tuples become lists (JSON has no tuple); everything else is already JSON."""
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value
