"""Module paths of release 0.1.0 that moved in the layered layout, kept importable for one release.

``import topoeval.env`` (say) still works and returns :mod:`topoeval.training.env` itself, with a
``DeprecationWarning`` naming the new path. The aliases go in the next release; the public API
(``topoeval.run_protocol``, ``load_protocol``, ``make_env``, ``reward``, ``export_tasks``,
``score_episode``) never moved.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

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


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        warnings.warn(f"{spec.name} moved to {self.new}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=4)
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        """The new module is already executed."""


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
