"""The package version (one place; the root package and run.json read it from here)."""

__version__ = "0.2.0"

#: The version of the harness code that decides what a model is sent and how its reply is read (the
#: prompt rendering of tools, tool-call parsing, chat templates and grammars, decoding defaults). Part
#: of every run's identity and of the response-cache key: bump it with any change there, so a run
#: folder made before the change is not resumed with old replies (topoeval.runner.config).
DECODING_VERSION = 1
