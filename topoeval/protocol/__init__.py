"""Protocols: the YAML schema (``schema``), loading and validation (``loader``), finding suites and
protocols (``discovery``), and a protocol topology made concrete (``topology``).

The schema models are re-exported here: ``from topoeval.protocol import Protocol`` works as it did
when this package was one module.
"""

from topoeval.protocol.schema import (  # noqa: F401
    Baselines,
    Limits,
    Protocol,
    Sampling,
    SplitSpec,
    TaskCounts,
    TopologySpec,
    TransformSpec,
)
