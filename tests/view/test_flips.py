"""The viewer's "what flipped" page (topoeval/view/flips.py, flips.js): from a cell, the tasks that flipped
between two models by direction, with the counts, McNemar's exact p and the paired verdict of
topoeval.analysis.paired; each flipped task opens the two episodes side by side at the first turn
where they differ; every view is a validated URL. Walked in headless Chromium, served and exported;
screenshots kept with test_viewer.py's (SHOTS)."""

import json
import re

import pytest

from tests.view.crafted import get, record, write_run
from tests.view.test_viewer import browse, dump, needs_chromium, page, text, turn_rows
from topoeval.analysis.paired import mcnemar_exact
from topoeval.view.data import Catalogue
from topoeval.view.flips import flips_payload
from topoeval.view.server import Viewer

#: base fails and tuned solves tasks 0-7 (0 → 1), base solves and tuned fails task 8 (1 → 0), both solve 9,
#: neither solves 10; "other" ran tasks 0 and 11 only
UP, DOWN, BOTH, NEITHER = range(8), [8], [9], [10]


def task(t):
    return f"t/test/{t}-x"


def episode(model, t, success, answer="done", note="same", sample=0, status="done"):
    """A two-turn episode: turn 1 a call add_note(note) and its result, turn 2 the answer."""
    rec = record(model=model, task=task(t), text=note, sample=sample, status=status)
    rec["messages"][-1]["content"] = answer
    rec["final_answer"] = answer
    rec["scores"] = {**rec["scores"], "success": float(success)}
    return rec


def records():
    out = []
    for t in range(11):
        base, tuned = (0, 1) if t in UP else (1, 0) if t in DOWN else (1, 1) if t in BOTH else (0, 0)
        out.append(episode("base", t, base, answer="I could not book it" if t in UP else "done"))
        # tasks that flipped up differ from turn 2 (the answer); the one that flipped down from turn 1 (the call)
        out.append(episode("tuned", t, tuned, note="other note" if t in DOWN else "same"))
    out += [episode("other", 0, 1), episode("other", 11, 1)]
    return out


@pytest.fixture(scope="module")
def flipped(tmp_path_factory):
    root = tmp_path_factory.mktemp("flips") / "results"
    write_run(root / "sweep", records())
    catalogue = Catalogue(root)
    (rid,) = catalogue.runs
    return root, rid, catalogue


def test_a_cells_flips_are_listed_by_direction_with_mcnemar_and_the_verdict(flipped):
    _, rid, catalogue = flipped
    index = catalogue.index(rid)
    assert [c[0] for c in index.cells] == ["base", "tuned", "other"]
    payload = catalogue.flips_payload(rid, 0)
    assert payload["cell"] == 0 and [x["model"] for x in payload["against"]] == ["tuned", "other"]
    tuned = payload["against"][0]
    number = {t: k for k, t in enumerate(index.tasks)}

    def episode_of(model, t):
        return next(n for n, row in enumerate(index.rows)
                    if index.cells[row[0]][0] == model and row[1] == number[task(t)])

    assert tuned["up"] == [[number[task(t)], episode_of("base", t), episode_of("tuned", t)] for t in UP]
    assert tuned["down"] == [[number[task(8)], episode_of("base", 8), episode_of("tuned", 8)]]
    assert (tuned["both"], tuned["neither"], tuned["tied"], tuned["only_a"], tuned["only_b"]) == (1, 1, 0, 0, 0)
    assert tuned["p"] == mcnemar_exact(8, 1) == pytest.approx(0.0390625)
    assert tuned["verdict"] == "b_better" and tuned["verdict_text"] == "tuned better"
    assert "tuned better when McNemar's exact p < 0.05" in tuned["rule"]
    other = payload["against"][1]  # two tasks in common with base? one (task 0); task 11 only "other" ran
    assert other["up"] == [[number[task(0)], episode_of("base", 0), episode_of("other", 0)]] and other["down"] == []
    assert (other["only_a"], other["only_b"], other["verdict"], other["p"]) == (10, 1, "tie", 1.0)
    # read from B's side, the same flips run the other way
    back = catalogue.flips_payload(rid, 1)["against"][0]
    assert back["model"] == "base" and [r[0] for r in back["down"]] == [r[0] for r in tuned["up"]]
    assert back["verdict_text"] == "tuned better" and back["verdict"] == "a_better"


def test_with_k_samples_a_task_flips_on_its_pass_rate_and_opens_the_sample_that_flipped(tmp_path):
    root = tmp_path / "results"
    write_run(root / "k", [
        episode("a", 0, 1, sample=0), episode("a", 0, 0, sample=1), episode("a", 0, 0, sample=2),
        episode("b", 0, 1, sample=0), episode("b", 0, 1, sample=1), episode("b", 0, 0, sample=2),
        # an episode that ended in error is not scored: a's task 1 is 1 of 1, b's 0 of 1
        episode("a", 1, 1, sample=0), episode("a", 1, 0, sample=1, status="error"), episode("b", 1, 0, sample=0)])
    catalogue = Catalogue(root)
    (rid,) = catalogue.runs
    index = catalogue.index(rid)
    (pair,) = catalogue.flips_payload(rid, 0)["against"]
    key = {(index.cells[row[0]][0], index.tasks[row[1]], row[2]): n for n, row in enumerate(index.rows)}
    # task 0: a 1/3, b 2/3 -> up; the pair opened is sample 1, where a failed and b solved
    assert pair["up"] == [[0, key["a", task(0), 1], key["b", task(0), 1]]]
    assert pair["down"] == [[1, key["a", task(1), 0], key["b", task(1), 0]]]


def test_a_cell_outside_the_run_is_refused(flipped):
    _, rid, catalogue = flipped
    for cell in (3, -1):
        with pytest.raises(IndexError):
            flips_payload(catalogue.index(rid), cell)


def test_the_server_answers_a_cells_flips_as_json_with_the_token_only(flipped):
    root, rid, catalogue = flipped
    with Viewer(root) as viewer:
        status, headers, body = get(viewer.base + f"data/{rid}/flips/0.json", viewer.token)
        assert status == 200 and headers["Content-Type"] == "application/json; charset=utf-8"
        assert json.loads(body) == json.loads(json.dumps(catalogue.flips_payload(rid, 0)))
        assert get(viewer.base + f"data/{rid}/flips/0.json")[0] == 403
        for path in (f"data/{rid}/flips/3.json", f"data/{rid}/flips/-1.json", f"data/{rid}/flips/x.json",
                     "data/r0000000000/flips/0.json", f"data/{rid}/flips/0.js"):
            assert get(viewer.base + path, viewer.token)[0] == 404, path


def test_the_export_writes_each_cells_flips(flipped, tmp_path, cli):
    root, rid, catalogue = flipped
    site = tmp_path / "site"
    assert cli("view", str(root), "--export", str(site)).returncode == 0
    written = sorted(p.name for p in (site / "data" / rid / "flips").iterdir())
    assert written == ["0.js", "1.js", "2.js"]
    body = (site / "data" / rid / "flips" / "0.js").read_text()
    assert body.startswith(f'topoevalData("{rid}/flips/0",')
    assert json.loads(body[body.index(",") + 1:-3]) == json.loads(json.dumps(catalogue.flips_payload(rid, 0)))


def hrefs(dom, cls=None):
    """The links of a page's main part (their query strings, unescaped), in order."""
    main = dom[dom.index('<main id="main">'):]
    return [h.replace("&amp;", "&") for h in re.findall(r'<a href="(\?[^"]*)"' if cls is None
                                                       else rf'<a href="(\?[^"]*)" class="{cls}"', main)]


def console_at(url, tmp_path):
    """The turn the page scrolled to and the scroll offset, from the page's console."""
    _, console = dump(url, tmp_path)
    (line,) = [line for line in console if "topoeval-view-at turn" in line]
    turn, y = re.search(r"topoeval-view-at turn (\w+) scrolled (\d+)", line).groups()
    return turn, int(y)


def walk(open_url, rid, tmp_path, prefix):
    """Open the cell → its "what flipped" link → filter by direction → a flipped task → the two episodes at
    the first differing turn → the same deep link loaded again. ``open_url(query)`` gives a view's URL."""
    dom = browse(open_url(f"run={rid}&cell=0"), tmp_path, f"{prefix}-1-cell.png", height=900)
    (what,) = [h for h in hrefs(dom) if "flips=" in h]
    assert what == f"?run={rid}&flips=0" and "What flipped: base against another model on a" in text(dom)
    dom = browse(open_url(what[1:]), tmp_path, f"{prefix}-2-what-flipped.png", height=1300)
    plain = text(dom)
    assert "What flipped: base → tuned" in plain
    assert "0 → 1: 8 solved by tuned, not by base" in plain and "1 → 0: 1 solved by base, not by tuned" in plain
    assert "both solve 1 · neither solves 1" in plain and "McNemar exact p = 0.039 · verdict: tuned better" in plain
    rows = re.findall(r'<tr class="row flip" data-task="(\d+)" data-dir="(up|down)">', dom)
    assert [d for _, d in rows] == ["up"] * 8 + ["down"] and "9 flipped task(s) shown" in plain
    assert re.search(r'<option value="1" selected="">tuned</option><option value="2">other</option>', dom)
    # the filter by direction (the select sets &dir=)
    down = browse(open_url(f"run={rid}&flips=0&with=1&dir=down"), tmp_path, f"{prefix}-3-down-only.png")
    assert re.findall(r'data-dir="(up|down)"', down) == ["down"] and "1 flipped task(s) shown (1 → 0 only; 9 in all)" \
        in text(down)
    assert re.search(r'<option value="down" selected="">', down)
    # a row opens the pair: the first task that went 0 -> 1
    first = [h for h in hrefs(dom) if "task=" in h][0]
    assert first == f"?run={rid}&flips=0&with=1&task={rows[0][0]}"
    pair = browse(open_url(first[1:]), tmp_path, f"{prefix}-4-pair-at-first-difference.png", height=700)
    plain = text(pair)
    assert f"{task(0)}: solved by tuned, not by base" in plain and "← what flipped" in plain
    columns = re.findall(r'<div class="col"><div class="episode-head"><div><h2>([\w-]+)</h2>', pair)
    assert columns == ["base", "tuned"]
    turns = turn_rows(pair)
    assert [t for t, r in turns.items() if r["first_diff"]] == ["2"]  # turn 1 is the same call and result
    assert "I could not book it" in turns["2"]["a"][1] and "I could not book it" not in turns["2"]["b"][1]
    assert console_at(open_url(first[1:]), tmp_path)[0] == "2"
    # the deep link loaded again shows the same pair at the same turn
    again = browse(open_url(first[1:]), tmp_path, f"{prefix}-5-deep-link-again.png", height=700)
    main = again[again.index('<main id="main">'):again.index("</main>")]
    assert main == pair[pair.index('<main id="main">'):pair.index("</main>")]
    # the task that went 1 -> 0 differs from turn 1 already
    (last,) = [h for h in hrefs(down) if "task=" in h]
    assert [t for t, r in turn_rows(browse(open_url(last[1:]), tmp_path, f"{prefix}-6-down-pair.png",
                                           height=700)).items() if r["first_diff"]] == ["1"]


@needs_chromium
def test_walking_a_flip_in_the_served_viewer(flipped, tmp_path):
    root, rid, _ = flipped
    with Viewer(root) as viewer:
        walk(lambda query: page(viewer, query), rid, tmp_path, "9-flips")
        turn, y = console_at(page(viewer, f"run={rid}&flips=0&task=0"), tmp_path)
        assert turn == "2" and y > 0  # the page scrolled down to the first difference


@needs_chromium
def test_walking_a_flip_in_the_static_export(flipped, tmp_path, cli):
    root, rid, _ = flipped
    site = tmp_path / "site"
    assert cli("view", str(root), "--export", str(site)).returncode == 0
    walk(lambda query: (site / "index.html").as_uri() + "?" + query, rid, tmp_path, "9-flips-export")


@pytest.fixture(scope="module")
def site(flipped, tmp_path_factory):
    from topoeval.view.export import export

    root, _, _ = flipped
    out = tmp_path_factory.mktemp("flips-site") / "site"
    export(root, out)
    return out


@needs_chromium
@pytest.mark.parametrize("query, why", [
    ("flips=3", 'no cell "3" here'), ("flips=../0", 'no cell "../0" here'),
    ("flips=0&with=0", 'no comparison of cell 0 with "0" here'), ("flips=0&with=9", 'with "9" here'),
    ("flips=0&dir=sideways", 'no direction "sideways" here'),
    ("flips=0&with=1&task=9", 'no flipped task "9" here'), ("flips=0&task=1e1", 'no flipped task "1e1" here')])
def test_a_deep_link_outside_the_runs_lists_shows_why_and_draws_nothing(flipped, site, tmp_path, query, why):
    """Cell 3 is past the run's cells, cell 0 against itself is no comparison, task 9 is one both solved."""
    _, rid, _ = flipped
    dom, console = dump((site / "index.html").as_uri() + f"?run={rid}&{query}", tmp_path)
    main = dom[dom.index('<main id="main">'):dom.index("</main>")]
    shown = re.fullmatch(r'<main id="main"><p class="why">Error: ([^<]*)</p>', main)
    assert shown and why in shown.group(1).replace("&quot;", '"'), main
    assert any("topoeval-view-error" in line for line in console)


def test_the_flips_page_is_among_the_public_files_and_loaded_before_the_app(flipped):
    root, _, _ = flipped
    with Viewer(root) as viewer:
        assert get(viewer.base + "flips.js")[0] == 200
        _, _, page_html = get(viewer.url)
    assert page_html.index(b'src="flips.js"') < page_html.index(b'src="app.js"')


@needs_chromium
def test_two_episodes_the_same_turn_by_turn_mark_no_first_difference(flipped, tmp_path):
    root, rid, catalogue = flipped
    index = catalogue.index(rid)
    same = [n for n, row in enumerate(index.rows) if index.tasks[row[1]] == task(9) and row[0] in (0, 1)]
    with Viewer(root) as viewer:
        dom = browse(page(viewer, f"run={rid}&ep={same[0]}&vs={same[1]}"), tmp_path, "9-flips-7-same.png")
    rows = turn_rows(dom)
    assert list(rows) == ["system", "1", "2", "end"] and not any(r["first_diff"] for r in rows.values())


@needs_chromium
def test_markup_in_model_names_and_tasks_is_shown_as_text_on_the_flips_pages(tmp_path, cli):
    from tests.view.crafted import HOSTILE
    from tests.view.test_viewer import assert_inert

    root = tmp_path / "results"
    bad = "t/test/0-" + HOSTILE
    a = episode("a" + HOSTILE, 0, 0, answer=HOSTILE)
    b = episode("b" + HOSTILE, 0, 1)
    for rec in (a, b):
        rec["key"] = rec["key"].replace(task(0), bad)
        rec["task_id"] = bad
    write_run(root / "hostile", [a, b])
    (rid,) = Catalogue(root).runs
    with Viewer(root) as served:
        assert_inert(browse(page(served, f"run={rid}&flips=0"), tmp_path, "9-flips-hostile.png"))
        assert_inert(browse(page(served, f"run={rid}&flips=0&task=0"), tmp_path, "9-flips-hostile-pair.png"))
    out = tmp_path / "site"
    assert cli("view", str(root), "--export", str(out)).returncode == 0
    assert_inert(browse((out / "index.html").as_uri() + f"?run={rid}&flips=0&task=0", tmp_path,
                        "9-flips-hostile-export.png"))
