"""Protocols: the YAML schema (``schema``), loading and validation (``loader``), finding suites and
protocols (``discovery``), and a protocol topology made concrete (``topology``).

Import from the modules themselves (``from topoeval.protocol.schema import Protocol``); the public
API is ``topoeval.load_protocol``.
"""
