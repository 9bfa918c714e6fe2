"""report.html in a real browser: headless Chromium (Debian's package) opens it offline, at 1400 px,
on a run of three models (one whose backend fails on some tasks)."""

import html
import json
import re
import shutil
import struct
import subprocess

import pytest

import topoeval
from topoeval.core.policy import Policy
from topoeval.policies.reference import OraclePolicy
from topoeval.report.html import task_order

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
WIDTH = 1400
TASKS = 12  # enough for task indices 10 and 11, which string order puts before 2


class FlakyBackend(Policy):
    """The oracle behind a backend that fails on every third task: its episodes end in error."""

    name = "flaky"

    def __init__(self):
        self.oracle = OraclePolicy()

    async def act(self, messages, tools, sampling, ctx):
        if int(ctx.task.id.split("/")[-1].split("-")[0]) % 3 == 0:
            raise ConnectionError("backend down")
        return await self.oracle.act(messages, tools, sampling, ctx)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "run"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "random", FlakyBackend()], out, tasks=TASKS, shots=[0, 1])
    return out


def page_data(run_dir):
    page = (run_dir / "report.html").read_text()
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1)
    return json.loads(block.replace("<\\/", "</"))


def test_page_is_self_contained(run_dir):
    page = (run_dir / "report.html").read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # no external URL, no CDN
    assert page.count("data:image/png;base64,") == 2
    assert (run_dir / "plot_fewshot.png").stat().st_size > 1000 and (run_dir / "plot_dimensions.png").exists()


def test_headline_comes_first_and_marks_the_incomplete_model(run_dir):
    page = (run_dir / "report.html").read_text()
    headline = page[page.index('<section id="headline">'):page.index("</section>")]
    assert page.index('<section id="headline">') < page.index("<h2>Success, ID vs OOD</h2>")
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td class=\"num\">(.*?)</td><td class=\"num\">(.*?)</td>"
                      r"<td class=\"num collateral\">(.*?)</td><td>(.*?)</td></tr>", headline)
    by_model = {r[0].split(" <span")[0]: r[:4] + r[5:] for r in rows}
    # travel defines collateral damage, wiki does not: the column beside success says so rather than 0
    collateral = {r[0].split(" <span")[0]: r[4] for r in rows}
    assert collateral["oracle"] == f"wiki: — (no scope)<br>travel: 0.00 [0.00, 0.00] (n={TASKS})"
    assert set(by_model) == {"oracle", "random", "flaky"} and all(r[1] == "0-shot" for r in rows)
    # the oracle: 1.00 with its CI on both sides, nothing lost
    assert by_model["oracle"][2] == "1.00 [1.00, 1.00]" and by_model["oracle"][3] == "travel: 1.00 [1.00, 1.00]"
    assert by_model["oracle"][4] == "travel: flat"
    # the flaky backend's lost episodes are left out (its answered ones all succeed) and flagged
    assert "incomplete: 8 err" in by_model["flaky"][0] and by_model["flaky"][2].startswith("1.00 [1.00, 1.00] (4 err)")
    # random solves nothing on either side here: the floor, not "flat"
    assert by_model["random"][4] in ("travel: floor", "travel: flat") or "travel: drop" in by_model["random"][4]
    assert (by_model["random"][4] == "travel: floor") == (by_model["random"][2].startswith("0.00")
                                                          and by_model["random"][3].startswith("travel: 0.00"))


def test_episodes_are_listed_by_task_index(run_dir):
    for cell in page_data(run_dir)["cells"]:
        indices = [int(ep["task_id"].split("/")[-1].split("-")[0]) for ep in cell["episodes"]]
        assert indices == sorted(indices) and len(indices) == TASKS
    assert sorted(["t/test/10-a", "t/test/2-a", "t/test/1-a"], key=task_order) == ["t/test/1-a", "t/test/2-a", "t/test/10-a"]


def chromium(url, tmp_path, *extra):
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         f"--window-size={WIDTH},900", "--virtual-time-budget=5000", *extra, url],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )


def console_lines(proc):
    console = [l for l in proc.stderr.splitlines() if "CONSOLE" in l]
    assert any("topoeval-report-ready" in l for l in console), proc.stderr[-2000:]
    assert not [l for l in console if "Uncaught" in l or "Error" in l], console
    return console


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed here (.ci/run installs Debian's chromium)")
def test_chromium_opens_the_page_and_shows_an_episode(run_dir, tmp_path):
    url = (run_dir / "report.html").as_uri() + "#cell=1&episode=0"
    proc = chromium(url, tmp_path, "--dump-dom")
    console_lines(proc)
    dom = proc.stdout
    # cell 1 is oracle / 0-shot / travel: its first episode's conversation is on the page
    assert dom.count('class="msg user"') == 1 and dom.count('class="msg tool"') >= 3
    assert "Please book me a flight" in dom and "call pay" in dom
    listed = re.findall(r'<li class="ok" data-episode="\d+">(travel/test/(\d+)-\w+) \(sample 0', dom)
    assert [int(i) for _, i in listed] == list(range(TASKS))  # by task index: 0, 1, 2, ..., 10, 11


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed here (.ci/run installs Debian's chromium)")
def test_chromium_filters_a_cell_to_its_errors(run_dir, tmp_path):
    cells = page_data(run_dir)["cells"]
    flaky = next(i for i, c in enumerate(cells) if c["label"].startswith("flaky · 0-shot · travel"))
    proc = chromium((run_dir / "report.html").as_uri() + f"#cell={flaky}&filter=errors", tmp_path, "--dump-dom")
    console_lines(proc)
    items = re.findall(r"<li class=\"(\w+)\" data-episode=\"\d+\">travel/test/(\d+)-\w+", proc.stdout)
    assert items and all(cls == "err" and int(i) % 3 == 0 for cls, i in items) and len(items) == 4
    assert "4 shown" in proc.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed here (.ci/run installs Debian's chromium)")
def test_page_fits_a_1400_px_window(run_dir, tmp_path):
    proc = chromium((run_dir / "report.html").as_uri(), tmp_path, "--screenshot=shot.png")
    layout = [l for l in console_lines(proc) if "topoeval-layout" in l]
    assert layout, proc.stderr[-2000:]
    scroll_width, client_width = map(int, re.search(r"topoeval-layout (\d+) (\d+)", layout[-1]).groups())
    assert client_width <= WIDTH and scroll_width <= client_width  # no horizontal scrollbar: nothing is cut off
    png = (tmp_path / "shot.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] == WIDTH


def test_page_lists_the_questions_the_simulated_user_could_not_map(run_dir):
    """Under report.md's user table: every unanswered question of the episodes.jsonl, linked to its
    episode (random asks questions the traveller cannot map; the oracle's are all mapped)."""
    page = (run_dir / "report.html").read_text()
    cells = page_data(run_dir)["cells"]
    want = {}
    for line in (run_dir / "episodes.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for e in rec.get("events", []):
            if e["type"] == "ask" and not e["slots"]:
                want.setdefault(f"{rec['model']} · {rec['baseline']} · {rec['topology']}", []).append(
                    (rec["task_id"], e["question"]))
    assert want and not [k for k in want if k.startswith("oracle")]
    section = page[page.index('<section id="unanswered">'):]
    section = section[:section.index("</section>")]
    assert page.index("<h2>Questions to the simulated user</h2>") < page.index('<section id="unanswered">') \
        < page.index("<h2>Collapse</h2>")
    links = re.findall(r'<li><a href="#cell=(\d+)&amp;episode=(\d+)">([^ ]+) \(sample \d+\)</a>: (.*?)</li>', section)
    got = {}
    for ci, ei, task_id, question in links:
        ep = cells[int(ci)]["episodes"][int(ei)]
        assert ep["task_id"] == task_id and any(e.get("question") == html.unescape(question) for e in ep["events"])
        got.setdefault(cells[int(ci)]["label"].split(" (")[0], []).append((task_id, html.unescape(question)))
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed here (.ci/run installs Debian's chromium)")
def test_chromium_filters_a_cell_to_its_episodes_with_unanswered_questions(run_dir, tmp_path):
    cells = page_data(run_dir)["cells"]
    ci = next(i for i, c in enumerate(cells) if c["label"].startswith("random · 0-shot · travel"))
    want = [ep["task_id"] for ep in cells[ci]["episodes"]
            if any(e["type"] == "ask" and not e["slots"] for e in ep["events"])]
    proc = chromium((run_dir / "report.html").as_uri() + f"#cell={ci}&filter=unanswered", tmp_path, "--dump-dom")
    console_lines(proc)
    items = re.findall(r'<li class="\w+" data-episode="\d+">(travel/test/\d+-\w+) ', proc.stdout)
    assert want and items == want and f"{len(want)} shown" in proc.stdout


def test_the_browser_keeps_a_bounded_sample_of_a_stream():
    """Read once, the browser keeps per cell the first episodes by task index and sample — the ones a sort
    of every episode would have given — and counts the rest without keeping them."""
    import random

    from topoeval.report.html import EpisodeSample

    records = [{"model": "m", "baseline": "0-shot", "topology": t, "task_id": f"wiki/test/{i}-x", "sample": s,
                "status": "done", "messages": [], "calls": [], "scores": {"success": 1.0}}
               for t in ("a", "b") for i in range(40) for s in range(3)]
    random.Random(0).shuffle(records)
    sample = EpisodeSample(limit=7)
    for r in iter(records):
        sample.add(r)
    total, kept = sample.cell(("m", "0-shot", "a"))
    first = sorted((r for r in records if r["topology"] == "a"), key=lambda r: (task_order(r["task_id"]), r["sample"]))
    assert total == 120 and len(sample.kept[("m", "0-shot", "a")]) == 7
    assert [(e["task_id"], e["sample"]) for e in kept] == [(r["task_id"], r["sample"]) for r in first[:7]]
