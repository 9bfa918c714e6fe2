"""Collateral damage in a run's episode list (topoeval/view/app.js, from the index's collateral code in
topoeval/view/index.py): a row whose episode changed something outside its task's scope carries a marker,
"collateral · irreversible" where that change cannot be undone; a clean episode and one whose collateral was
not measured carry none; the list filters to the damaged episodes (or the irreversible, or the clean ones) from
the URL, as its other filters. Screenshots are kept beside test_viewer.py's (``12-list-collateral-*.png``)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.view.crafted import record, write_run
from tests.view.test_viewer import browse, needs_chromium, page, text
from topoeval.view.data import Catalogue
from topoeval.view.index import COLLATERAL, IRREVERSIBLE_COLLATERAL, NO_COLLATERAL
from topoeval.view.server import Viewer

#: task name -> (collateral, collateral_irreversible) of its episode's scores; None: not measured (no keys)
EPISODES: dict[str, tuple[float, float] | None] = {
    "0-damaged": (1.0, 1.0), "1-clean": (0.0, 0.0), "2-unmeasured": None, "3-put-right": (1.0, 0.0)}


def scored(task: str, collateral: tuple[float, float] | None) -> dict[str, Any]:
    """A crafted record whose scores carry collateral where the runner writes it: after the reasons, before
    the counts (topoeval/metrics/scoring.py)."""
    rec = record(task=f"t/test/{task}")
    head = {k: v for k, v in rec["scores"].items() if k not in ("tool_calls", "invalid_calls")}
    damage = {} if collateral is None else {"collateral": collateral[0], "collateral_irreversible": collateral[1],
                                            "collateral_entities": collateral[0]}
    rec["scores"] = {**head, "reasons": {"efficiency": "one call"}, **damage, "tool_calls": 1, "invalid_calls": 0}
    return rec


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(run id, its payload, its served viewer) of a run of the four EPISODES, in order."""
    root = tmp_path_factory.mktemp("list-collateral") / "results"
    write_run(root / "run", [scored(task, c) for task, c in EPISODES.items()])
    catalogue = Catalogue(root)
    (rid,) = catalogue.runs
    with Viewer(root) as viewer:
        yield rid, catalogue.run_payload(rid), viewer


def listed(dom: str) -> dict[str, str]:
    """task name -> the markers of its row's outcome cell ("" for none), of the rows the list shows."""
    out = {}
    for row in re.findall(r'<tr class="row" data-episode="\d+">(.*?)</tr>', dom, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        task = cells[4].rsplit("/", 1)[-1]
        out[task] = " ".join(re.findall(r'<span class="pill collateral[^"]*"[^>]*>([^<]*)</span>', cells[6]))
    return out


def test_the_index_gives_each_episode_its_collateral_code(served):
    _, run, _ = served
    assert [e[6] for e in run["episodes"]] == [IRREVERSIBLE_COLLATERAL, NO_COLLATERAL, None, COLLATERAL]


@needs_chromium
def test_a_damaged_episode_is_marked_in_the_list_and_a_clean_or_unmeasured_one_is_not(served, tmp_path):
    rid, _, viewer = served
    dom = browse(page(viewer, f"run={rid}"), tmp_path, "12-list-collateral.png")
    assert listed(dom) == {"0-damaged": "collateral · irreversible", "1-clean": "", "2-unmeasured": "",
                           "3-put-right": "collateral"}
    assert "4 of 4 episodes shown" in text(dom)
    assert '<span class="pill collateral irr" title="changed something outside the task' in dom  # says what it means


@needs_chromium
def test_the_list_filters_to_collateral_only_from_the_url(served, tmp_path):
    rid, _, viewer = served
    dom = browse(page(viewer, f"run={rid}&collateral=yes"), tmp_path, "12-list-collateral-only.png")
    assert list(listed(dom)) == ["0-damaged", "3-put-right"] and "2 of 4 episodes shown" in text(dom)
    assert re.search(r'<option value="yes" selected="">collateral only</option>', dom)
    irreversible = browse(page(viewer, f"run={rid}&collateral=irreversible"), tmp_path, "12-list-irreversible.png")
    assert listed(irreversible) == {"0-damaged": "collateral · irreversible"}
    clean = browse(page(viewer, f"run={rid}&collateral=no"), tmp_path, "12-list-no-collateral.png")
    assert listed(clean) == {"1-clean": ""}  # not measured is not "none"
    # an episode opened from the filtered list links back to it, the filter kept
    back = browse(page(viewer, f"run={rid}&collateral=yes&ep=0"), tmp_path, "12-list-collateral-episode.png")
    assert re.search(r'<a href="\?run=' + rid + r'&amp;collateral=yes">← episodes</a>', back)
