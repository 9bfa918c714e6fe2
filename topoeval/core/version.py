"""The package version (one place; the root package and run.json read it from here)."""

__version__ = "0.2.0"
