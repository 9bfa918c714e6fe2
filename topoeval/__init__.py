"""topoeval: how an agent trained on one tool topology generalises to another.

Public API (imported lazily so that ``import topoeval`` stays cheap)::

    import topoeval
    protocol = topoeval.load_protocol("wiki_hops")
    result = topoeval.run_protocol(protocol, models=["oracle", "noop"], out="runs/demo")
    print(result.cell("oracle", "wiki-id")["metrics"]["success"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["load_protocol", "run_protocol", "RunResult", "score_episode", "reward", "make_env", "export_tasks",
           "__version__"]

if TYPE_CHECKING:
    from topoeval.protocol_loader import load_protocol
    from topoeval.runner.run import RunResult, run_protocol
    from topoeval.env import make_env
    from topoeval.export import export_tasks
    from topoeval.rewards import reward
    from topoeval.scoring import score_episode


def __getattr__(name: str) -> Any:
    if name == "load_protocol":
        from topoeval.protocol_loader import load_protocol

        return load_protocol
    if name in ("run_protocol", "RunResult"):
        from topoeval.runner import run

        return getattr(run, name)
    if name == "score_episode":
        from topoeval.scoring import score_episode

        return score_episode
    if name == "reward":
        from topoeval.rewards import reward

        return reward
    if name == "make_env":
        from topoeval.env import make_env

        return make_env
    if name == "export_tasks":
        from topoeval.export import export_tasks

        return export_tasks
    raise AttributeError(f"module 'topoeval' has no attribute {name!r}")
