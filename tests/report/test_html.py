"""report.html in a real browser: headless Chromium (Debian's package) opens it offline."""

import re
import shutil
import subprocess

import pytest

import topoeval

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "run"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "random"], out, tasks=2, shots=[0, 1])
    return out


def test_page_is_self_contained(run_dir):
    page = (run_dir / "report.html").read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # no external URL, no CDN
    assert page.count("data:image/png;base64,") == 2
    assert (run_dir / "plot_fewshot.png").stat().st_size > 1000 and (run_dir / "plot_dimensions.png").exists()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed here (.ci/run installs Debian's chromium)")
def test_chromium_opens_the_page_and_shows_an_episode(run_dir, tmp_path):
    url = (run_dir / "report.html").as_uri() + "#cell=1&episode=0"
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=3000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120,
    )
    console = [l for l in proc.stderr.splitlines() if "CONSOLE" in l]
    assert any("topoeval-report-ready" in l for l in console), proc.stderr[-2000:]
    assert not [l for l in console if "Uncaught" in l or "Error" in l], console
    dom = proc.stdout
    # cell 1 is oracle / 0-shot / travel: its first episode's conversation is on the page
    assert dom.count('class="msg user"') == 1 and dom.count('class="msg tool"') >= 3
    assert "Please book me a flight" in dom and "call pay" in dom
