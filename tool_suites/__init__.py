"""The shipped suites, installed as the package ``topoeval_tool_suites``; one folder each.

Each suite registers through the ``topoeval.suites`` entry-point group (``pyproject.toml``), the same
way a third-party package's suite does: the entry point is one of the functions below, which gives
the suite's folder inside the installed distribution (found with :mod:`importlib.resources`), and
:mod:`topoeval.protocol.discovery` loads that folder exactly like a ``--suites-dir`` folder.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def folder(name: str) -> Path:
    """The installed folder of the shipped suite ``name`` (a real folder: topoeval is not zip-safe)."""
    return Path(str(files(__name__) / name))


def agentdojo() -> Path:
    """AgentDojo's four worlds (extra topoeval[agentdojo])."""
    return folder("agentdojo")


def bfcl() -> Path:
    """BFCL v4's multi-turn worlds (extra topoeval[bfcl])."""
    return folder("bfcl")


def mcp() -> Path:
    """Any MCP server's tools (extra topoeval[mcp])."""
    return folder("mcp")


def tau2() -> Path:
    """τ²-bench's airline, retail and telecom worlds (extra topoeval[tau2])."""
    return folder("tau2")


def travel() -> Path:
    """Stateful travel booking with a hidden-slot user."""
    return folder("travel")


def wiki() -> Path:
    """Read-only Wikipedia-style search, single and multi-hop."""
    return folder("wiki")
