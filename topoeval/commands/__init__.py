"""CLI commands kept out of ``topoeval/cli.py`` (which only registers them): one module per command."""
