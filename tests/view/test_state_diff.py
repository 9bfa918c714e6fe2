"""The viewer's state-diff pane (topoeval/view/statediff.js) in headless Chromium: per episode, the entities
changed in the task's scope and out of it, each with its kind, reversible or not, the calls that wrote it and
its value before and after, the collateral ones flagged; "not recorded" for a record from before collateral
was kept, "not defined" where the suite defines no scope; entity names and values are text, never markup.
Screenshots are kept beside test_viewer.py's (``11-state-diff-*.png``)."""

from __future__ import annotations

import html
import json
import re

import pytest

import topoeval
from tests.view.crafted import HOSTILE, get, record, write_run
from tests.view.test_viewer import assert_inert, browse, episode, needs_chromium, page, text
from topoeval.view.data import Catalogue
from topoeval.view.server import Viewer


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """(results folder, run id, the run's payload, its records by episode number) of a wiki_to_travel run of
    the oracle and oracle-collateral: travel defines a collateral scope, wiki does not."""
    results = tmp_path_factory.mktemp("statediff") / "results"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "oracle-collateral"], results / "cr", tasks=2, shots=[0])
    catalogue = Catalogue(results)
    (rid,) = catalogue.runs
    index = catalogue.index(rid)
    return results, rid, catalogue.run_payload(rid), index.records(0, len(index))


def pane(dom: str) -> str:
    """The state-diff pane's HTML (the first on the page)."""
    start = dom.index('<div class="panel state-diff-pane">')
    end = dom.find('<div class="conv">', start)
    return dom[start:end if end > 0 else len(dom)]


def rows(section: str) -> list[dict[str, str]]:
    """The pane's entity rows: kind, name, reversible, written by, before, after (as the page shows them)."""
    out = []
    for kind, body in re.findall(r'<tr class="entity (\w+)" data-kind="\w+">(.*?)</tr>', section, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)
        name = re.match(r'<span class="text">(.*?)</span>', cells[0], re.S).group(1)
        out.append({"kind": kind, "entity": html.unescape(name), "flagged": 'class="flag collateral"' in cells[0],
                    "reversible": cells[2], "calls": html.unescape(cells[3]), "before": html.unescape(cells[4]),
                    "after": html.unescape(cells[5])})
    return out


def shown_value(value):
    """A value as the pane shows it: compact JSON, "(absent)" for an entity that does not exist."""
    return "(absent)" if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@needs_chromium
def test_an_episode_with_damage_lists_each_entity_in_and_out_of_scope_with_the_calls_that_wrote_it(real, tmp_path):
    results, rid, run, records = real
    n = episode(run, "oracle-collateral", "travel", 0)
    rec = records[n]
    assert rec["scores"]["collateral"] == 1.0  # the reference damages an entity outside the task
    with Viewer(results) as served:
        dom = browse(page(served, f"run={rid}&ep={n}"), tmp_path, "11-state-diff-damage.png", height=2000)
    box = pane(dom)
    damage = [e for e in rec["collateral"]["entities"] if e["kind"] == "collateral"]
    irreversible = [e for e in damage if not e["reversible"]]
    summary = f"{len(damage)} collateral entit{'y' if len(damage) == 1 else 'ies'}" + (
        f" ({len(irreversible)} irreversible)" if irreversible else "")
    assert summary in text(box)
    inside = box[box.index('<div class="scope in">'):box.index('<div class="scope out">')]
    outside = box[box.index('<div class="scope out">'):]
    want = {"in": [e for e in rec["collateral"]["entities"] if e["kind"] in ("in_scope", "wrong_in_scope", "missed")],
            "out": [e for e in rec["collateral"]["entities"] if e["kind"] in ("collateral", "restored")]}
    assert f"In scope ({len(want['in'])})" in text(inside) and f"Out of scope ({len(want['out'])})" in text(outside)
    for section, expected in ((inside, want["in"]), (outside, want["out"])):
        shown = rows(section)
        assert [r["entity"] for r in shown] == [e["entity"] for e in expected]
        for r, e in zip(shown, expected, strict=True):
            assert r["kind"] == e["kind"] and r["flagged"] == (e["kind"] == "collateral")
            assert r["reversible"] == ("reversible" if e["reversible"] else "irreversible")
            # the calls that wrote it, by index and the tool's name, as the episode's calls hold them
            assert r["calls"] == (", ".join(f"#{i} {rec['calls'][i]['name']}" for i in e["calls"]) or "—")
            assert r["before"] == shown_value(e["before"]) and r["after"] == shown_value(e["after"])
    assert len(rows(outside)) >= 1 and all(r["flagged"] for r in rows(outside) if r["kind"] == "collateral")


@needs_chromium
def test_an_episode_without_damage_and_one_whose_suite_defines_no_scope_say_so(real, tmp_path):
    results, rid, run, records = real
    clean, wiki = episode(run, "oracle", "travel", 0), episode(run, "oracle-collateral", "wiki", 0)
    assert records[clean]["scores"]["collateral"] == 0.0 and records[wiki]["collateral"] is None
    with Viewer(results) as served:
        ok = pane(browse(page(served, f"run={rid}&ep={clean}"), tmp_path, "11-state-diff-clean.png", height=1600))
        none = pane(browse(page(served, f"run={rid}&ep={wiki}"), tmp_path, "11-state-diff-no-scope.png"))
    assert "no collateral damage" in ok and not re.search(r'class="flag collateral"', ok)
    assert "Out of scope (0)" in text(ok) or all(r["kind"] == "restored" for r in rows(ok))
    assert "Not defined: this topology's suite gives its tasks no collateral scope" in text(none)
    assert "not 0" in text(none) and "<table" not in none


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """A run of three crafted records: one from before collateral was recorded (no ``collateral`` key), one
    whose collateral entity's name and values hold markup, and its served viewer."""
    root = tmp_path_factory.mktemp("statediff-crafted") / "results"
    old = record(task="t/test/0-old")
    hostile = record(task="t/test/1-hostile", collateral={"basis": "gold_state", "entities": [
        {"entity": "db." + HOSTILE, "kind": "collateral", "reversible": False, "calls": [0],
         "before": {"note": HOSTILE}, "after": HOSTILE, "gold": None},
        {"entity": "db.ok", "kind": "in_scope", "reversible": True, "calls": [0], "before": 1, "after": 2, "gold": 2}]})
    hostile["calls"][0]["name"] = HOSTILE
    write_run(root / "crafted", [old, hostile])
    (rid,) = Catalogue(root).runs
    with Viewer(root) as served:
        yield root, rid, served


@needs_chromium
def test_a_record_from_before_collateral_was_recorded_says_not_recorded(crafted, tmp_path):
    _, rid, served = crafted
    box = pane(browse(page(served, f"run={rid}&ep=0"), tmp_path, "11-state-diff-old-record.png"))
    assert "Collateral not recorded" in text(box) and "<table" not in box


@needs_chromium
def test_entity_names_values_and_call_names_are_text_never_markup(crafted, tmp_path, cli):
    root, rid, served = crafted
    assert get(served.base + "statediff.js")[0] == 200  # public, as the page's other code
    dom = browse(page(served, f"run={rid}&ep=1"), tmp_path, "11-state-diff-hostile.png", height=1400)
    assert_inert(dom)
    (damage,) = [r for r in rows(pane(dom)) if r["kind"] == "collateral"]
    assert damage["entity"] == "db." + HOSTILE and damage["after"] == json.dumps(HOSTILE)
    assert damage["before"] == json.dumps({"note": HOSTILE}, separators=(",", ":"))
    assert damage["calls"] == "#0 " + HOSTILE and damage["reversible"] == "irreversible" and damage["flagged"]
    out = tmp_path / "site"  # the static export carries the pane's script and draws it from file://
    assert cli("view", str(root), "--export", str(out)).returncode == 0 and (out / "statediff.js").is_file()
    exported = browse((out / "index.html").as_uri() + f"?run={rid}&ep=1", tmp_path, "11-state-diff-export.png")
    assert_inert(exported)
    assert [r["entity"] for r in rows(pane(exported))] == ["db.ok", "db." + HOSTILE]
