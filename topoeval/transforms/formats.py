"""``tool_format``: the format-shift transform. The topology stays exactly as it is (tools, tasks, worlds,
scores, the oracle); only the tool-call format the model is addressed in changes — a ladder step of
its own (axis ``format``), so a collapse report separates format loss from topology loss.

A model backend reads the format through :func:`topoeval.formats.suite_format` on the episode's suite;
reference policies act on the world directly and are unaffected (the oracle stays at 1.0).
"""

from __future__ import annotations

from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.suite import Suite
from topoeval.formats import known_formats
from topoeval.transforms.params import SuiteView


class FormatView(SuiteView):
    """``inner`` unchanged, with the tool-call format its episodes address a model in."""

    def __init__(self, inner: Suite, tool_format: str):
        super().__init__(inner)
        #: the format's name (:mod:`topoeval.formats`)
        self.tool_format = tool_format


def tool_format(suite: Suite, args: dict[str, Any]) -> Suite:
    unknown = sorted(set(args) - {"format"})
    if unknown or not isinstance(args.get("format"), str):
        raise UserError(f"tool_format takes one argument, format (one of: {', '.join(known_formats())})"
                        + (f"; not {', '.join(unknown)}" if unknown else ""))
    if args["format"] not in known_formats():
        raise UserError(f"tool_format: unknown format '{args['format']}' (known: {', '.join(known_formats())})")
    return FormatView(suite, args["format"])
