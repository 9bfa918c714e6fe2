"""Module paths of 0.1.0 that moved (docs/architecture.md, "What moved after 0.1.0"): importing one
fails with one line naming the new place, instead of a bare ``No module named ...``.

0.1.0 was never released and 0.2.0 dropped the aliases, but suites written against 0.1.0's
documented API still import the old paths; :func:`install` (run by ``import topoeval``) puts a
finder last on ``sys.meta_path`` that answers only these names, after every real module was looked for.
"""

from __future__ import annotations

import importlib.abc
import sys

#: old module path -> new module path
MOVED = {
    "topoeval.errors": "topoeval.core.errors",
    "topoeval.messages": "topoeval.core.messages",
    "topoeval.suite": "topoeval.core.suite",
    "topoeval.state": "topoeval.core.state",
    "topoeval.answers": "topoeval.core.answers",
    "topoeval.gold": "topoeval.core.gold",
    "topoeval.parquet": "topoeval.core.parquet",
    "topoeval.policies.base": "topoeval.core.policy",
    "topoeval.protocol_loader": "topoeval.protocol.loader",
    "topoeval.discovery": "topoeval.protocol.discovery",
    "topoeval.topology": "topoeval.protocol.topology",
    "topoeval.scoring": "topoeval.metrics.scoring",
    "topoeval.oracle": "topoeval.policies.oracle",
    "topoeval.demos": "topoeval.runner.demos",
    "topoeval.summary": "topoeval.analysis.summary",
    "topoeval.collapse": "topoeval.analysis.collapse",
    "topoeval.ladder": "topoeval.analysis.ladder",
    "topoeval.sensitivity": "topoeval.analysis.sensitivity",
    "topoeval.metrics.stats": "topoeval.analysis.stats",
    "topoeval.report_md": "topoeval.report.markdown",
    "topoeval.report_html": "topoeval.report.html",
    "topoeval.report_files": "topoeval.report.files",
    "topoeval.plots": "topoeval.report.plots",
    "topoeval.export": "topoeval.training.export",
    "topoeval.env": "topoeval.training.env",
    "topoeval.rewards": "topoeval.training.rewards",
}

#: (package, name) of 0.1.0 -> the module that holds the name now (``from topoeval.protocol import Protocol``)
MOVED_NAMES = {
    **{("topoeval.protocol", n): "topoeval.protocol.schema"
       for n in ("Baselines", "Limits", "Protocol", "Sampling", "SplitSpec", "TaskCounts", "TopologySpec",
                 "TransformSpec")},
    **{("topoeval.report", n): "topoeval.report.tables"
       for n in ("print_success_table", "print_quality_table", "print_sensitivity")},
}


def moved_message(old: str, new: str) -> str:
    """The one line for an old path."""
    return (f"{old} moved to {new} in topoeval 0.2.0 (see docs/architecture.md, 'What moved after 0.1.0'; "
            "docs/writing-a-suite.md lists the imports a suite needs)")


def moved_name(package: str, name: str) -> ImportError:
    """The error for ``from PACKAGE import NAME`` when the name moved (an ImportError, so ``from ... import``
    shows its message as it is)."""
    new = MOVED_NAMES[(package, name)]
    return ImportError(moved_message(f"{package}.{name}", f"{new}.{name}"), name=package)


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Consulted last: only a name no real module answered reaches it."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        raise ModuleNotFoundError(moved_message(fullname, new), name=fullname)


def install() -> None:
    """Put the finder last on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
