"""topoeval: how an agent trained on one tool topology generalises to another.

Public API (imported lazily so that ``import topoeval`` stays cheap)::

    import topoeval
    protocol = topoeval.load_protocol("wiki_hops")
    result = topoeval.run_protocol(protocol, models=["oracle", "noop"], out="runs/demo")
    print(result.cell("oracle", "wiki-id")["metrics"]["success"])

The package is layered along the flow (``docs/architecture.md``): ``core`` → ``metrics`` →
``transforms`` → ``protocol`` → ``models`` → ``policies`` → ``runner`` → ``analysis`` →
``report`` / ``training`` → ``api`` → ``publish`` / ``integrations`` → ``cli``; a module imports only
from its own layer and the layers before it (checked by import-linter in the test run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topoeval.core.moved import install as _install_moved
from topoeval.core.version import __version__

_install_moved()  # `import topoeval.messages` (0.1.0) names its new place in one line

__all__ = ["load_protocol", "run_protocol", "RunConfig", "RunResult", "run_sweep", "SweepPoint", "score_episode",
           "reward", "make_env", "export_tasks", "__version__"]

#: public name -> the module that defines it
_PUBLIC = {
    "load_protocol": "topoeval.protocol.loader",
    "run_protocol": "topoeval.api",
    "RunResult": "topoeval.api",
    "run_sweep": "topoeval.api",
    "SweepPoint": "topoeval.analysis.sweep",
    "RunConfig": "topoeval.runner.config",
    "score_episode": "topoeval.metrics.scoring",
    "reward": "topoeval.training.rewards",
    "make_env": "topoeval.training.env",
    "export_tasks": "topoeval.training.export",
}

if TYPE_CHECKING:
    from topoeval.analysis.sweep import SweepPoint
    from topoeval.api import RunResult, run_protocol, run_sweep
    from topoeval.metrics.scoring import score_episode
    from topoeval.protocol.loader import load_protocol
    from topoeval.runner.config import RunConfig
    from topoeval.training.env import make_env
    from topoeval.training.export import export_tasks
    from topoeval.training.rewards import reward


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'topoeval' has no attribute {name!r}")

