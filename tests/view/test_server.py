"""The served viewer is private to whoever started it: every data and file path needs the launch's
token (the page's cookie or header), the Host must be the viewer's own, a request from another origin
or site is refused, data are JSON (never a script), and no file is served through a symlink."""

import json
import os

import pytest

from tests.view.crafted import get, record, write_run
from topoeval.view.server import Viewer, cookie_name

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    run = write_run(tmp / "results" / "r", [record(), record(sample=1)])
    (run / "plot_ladder.png").write_bytes(PNG)
    secret = tmp / "secret.png"
    secret.write_bytes(b"\x89PNG secret outside the run folder")
    os.chmod(secret, 0o600)
    (run / "link.png").symlink_to(secret)
    with Viewer(tmp / "results") as viewer:
        status, _, body = get(viewer.base + "data/runs.json", viewer.token)
        assert status == 200
        yield viewer, json.loads(body)["runs"][0]["id"]


def paths(rid):
    return ["data/runs.json", f"data/{rid}.json", f"data/{rid}/all.json", f"data/{rid}/0.json",
            f"data/{rid}/flips/0.json", f"files/{rid}/plot_ladder.png", "", "index.html"]


def test_every_data_and_file_path_needs_the_token(served):
    viewer, rid = served
    for path in paths(rid):
        assert get(viewer.base + path)[0] == 403, path
        assert get(viewer.base + path, "x" * 43)[0] == 403, path
        assert get(viewer.base + path, headers={"Cookie": f"{cookie_name(viewer.port)}=wrong"})[0] == 403, path
        assert get(viewer.base + path, viewer.token)[0] == 200, path
        cookie = {"Cookie": f'other="a b; c,d; {cookie_name(viewer.port)}={viewer.token}'}
        assert get(viewer.base + path, headers=cookie)[0] == 200, path
    for public in ("app.js", "flips.js", "style.css"):  # the page's code holds no data
        assert get(viewer.base + public)[0] == 200


def test_the_printed_url_opens_the_page_and_sets_a_private_cookie(served):
    viewer, _ = served
    assert viewer.url == f"http://127.0.0.1:{viewer.port}/?token={viewer.token}" and len(viewer.token) >= 43
    status, headers, body = get(viewer.url)
    assert status == 200 and body.startswith(b"<!doctype html>")
    assert headers["Set-Cookie"] == f"{cookie_name(viewer.port)}={viewer.token}; HttpOnly; SameSite=Strict; Path=/"
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    with Viewer(viewer.catalogue.root) as other:  # each launch draws its own token
        assert other.token != viewer.token and get(other.base + "data/runs.json", viewer.token)[0] == 403


def test_a_wrong_host_or_a_foreign_origin_or_site_is_refused(served):
    viewer, rid = served
    ok = {"Host": f"localhost:{viewer.port}"}
    assert get(viewer.base + "data/runs.json", viewer.token, ok)[0] == 200
    refused = [{"Host": f"evil.example:{viewer.port}"}, {"Host": "127.0.0.1"},
               {"Host": f"127.0.0.1:{viewer.port + 1}"},
               {"Origin": f"http://127.0.0.1:{viewer.port + 1}"}, {"Origin": "null"},
               {"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}]
    for headers in refused:
        for path in (*paths(rid), "app.js", "flips.js"):
            status, _, body = get(viewer.base + path, viewer.token, headers)
            assert status == 403 and body.startswith(b"forbidden: "), (headers, path)
    same = {"Origin": f"http://127.0.0.1:{viewer.port}", "Sec-Fetch-Site": "same-origin"}
    assert get(viewer.base + "data/runs.json", viewer.token, same)[0] == 200


def test_data_are_json_that_no_page_can_run_as_a_script(served):
    viewer, rid = served
    for path in paths(rid)[:5]:
        status, headers, body = get(viewer.base + path, viewer.token)
        assert status == 200 and headers["Content-Type"] == "application/json; charset=utf-8", path
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Cross-Origin-Resource-Policy"] == "same-origin"
        json.loads(body)
    for old in ("data/runs.js", f"data/{rid}.js", f"data/{rid}/0.js"):  # the scripts of old are gone
        assert get(viewer.base + old, viewer.token)[0] == 404, old


def test_a_symlinked_png_is_neither_listed_nor_served(served):
    viewer, rid = served
    status, _, body = get(viewer.base + f"data/{rid}.json", viewer.token)
    assert json.loads(body)["pictures"] == ["plot_ladder.png"]
    assert get(viewer.base + f"files/{rid}/plot_ladder.png", viewer.token)[2] == PNG
    status, _, body = get(viewer.base + f"files/{rid}/link.png", viewer.token)
    assert status == 404 and b"secret" not in body


def test_view_prints_the_url_with_its_token(cli, tmp_path, monkeypatch):
    write_run(tmp_path / "results" / "r", [record()])
    printed = []

    def stop(seconds):
        raise KeyboardInterrupt

    import topoeval.commands.view as view_command

    monkeypatch.setattr(view_command.time, "sleep", stop)
    monkeypatch.setattr(view_command.webbrowser, "open", printed.append)
    proc = cli("view", str(tmp_path / "results"))
    assert proc.returncode == 0, proc.stderr
    (url,) = printed
    assert url.startswith("http://127.0.0.1:") and "/?token=" in url and url in proc.stderr
