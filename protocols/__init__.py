"""The shipped protocols, one YAML file each, installed as the package ``topoeval_protocols``.

The repository keeps them here at its top level; ``pyproject.toml`` maps this folder into the
distribution, and :mod:`topoeval.protocol.discovery` reads it with :mod:`importlib.resources`, so a
wheel and an editable install find the same files. Nothing is importable from it.
"""
