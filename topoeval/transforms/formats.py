"""``tool_format``: the format-shift transform. The topology stays exactly as it is (tools, tasks, worlds,
scores, the oracle); only the tool-call format the model is addressed in changes — a ladder step of
its own (axis ``format``), so a collapse report separates format loss from topology loss.

A model backend reads the format through :func:`topoeval.formats.suite_format` on the episode's suite;
reference policies act on the world directly and are unaffected (the oracle stays at 1.0).
"""

from __future__ import annotations

from topoeval.core.suite import Suite
from topoeval.transforms.args import ToolFormatArgs
from topoeval.transforms.params import SuiteView


class FormatView(SuiteView):
    """``inner`` unchanged, with the tool-call format its episodes address a model in."""

    def __init__(self, inner: Suite, tool_format: str):
        super().__init__(inner)
        #: the format's name (:mod:`topoeval.formats`)
        self.tool_format = tool_format


def tool_format(suite: Suite, args: ToolFormatArgs) -> Suite:
    """The format is checked with the arguments (:class:`~topoeval.transforms.args.ToolFormatArgs`)."""
    return FormatView(suite, args.format)
