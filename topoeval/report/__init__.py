"""Presentation: terminal tables (``tables``), report.md (``markdown``), report.html (``html``),
PNG plots (``plots``), and writing all of them into a run folder (``files``)."""
