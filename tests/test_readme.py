"""The README reads in two minutes (issue 47): at most 150 lines, its sections in the newcomer's order,
and every page it links exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_short_and_in_order():
    assert len(README.splitlines()) <= 150
    headings = re.findall(r"^## (.+)$", README, re.M)
    order = ["Two commands", "With pip", "One result", "Python API", "Documentation"]
    assert [next(i for i, h in enumerate(headings) if h.startswith(o)) for o in order] == sorted(
        next(i for i, h in enumerate(headings) if h.startswith(o)) for o in order)
    assert "make eval PROTOCOL=wiki_to_travel" in README and "make test" in README


def test_every_link_resolves():
    for target in re.findall(r"\]\(((?:docs|results)/[^)#]+)", README):
        assert (ROOT / target).exists(), target


def test_no_timing_history():
    """Per-CPU timings and measurement history live in docs/results-2026-12.md and the CHANGELOG."""
    assert not re.search(r"\d+ min \d+ s|EPYC|AMX|Xeon", README)
