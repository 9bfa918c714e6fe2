"""Bad input stays one line, fast (issue 43): YAML aliases in protocols, task files, overlays and suite
manifests are expanded with a bound (a 600-byte "billion laughs" protocol used to hang `validate`
for hours, a self-referencing alias was a RecursionError traceback), nesting is bounded, a file that is
not UTF-8 is one line naming its byte offset (issue 56: it was a UnicodeDecodeError traceback), and task
counts and samples have an upper bound checked before any task is built.

Each case runs in a forked child with a deadline and a memory cap, so a regression fails the test
instead of hanging or exhausting the machine; the time limits are generous guards (the real
figures: ``python -m tests.protocol.test_bad_input`` prints them)."""

import multiprocessing
import resource
import time
from pathlib import Path

import pytest

from topoeval.protocol.loader import load_protocol
from topoeval.protocol.schema import MAX_SAMPLES, MAX_TASKS

#: wall-clock guard per case (the fix answers in milliseconds; the bug took hours)
GUARD_S = 5.0
MEMORY_CAP = 3 << 30

PROTOCOL = """\
name: p
train:
  name: a
  suite: wiki
  params:
{params}
test:
  - {{name: a, role: id, suite: wiki}}
tasks:
  test: {{n: {n}, seed: 1}}
samples: {samples}
"""


def protocol_text(params: str = "    {}", n: int = 2, samples: int = 1) -> str:
    return PROTOCOL.format(params=params, n=n, samples=samples)


def laughs(levels: int = 10, width: int = 9) -> str:
    """A chain of anchors, each level ``width`` aliases of the one before: width**levels leaves."""
    lines = [f"    l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines)


def _child(conn, fn, args):
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    started = time.perf_counter()
    try:
        value = fn(*args)
        outcome = ("ok", repr(value))
    except BaseException as exc:  # noqa: BLE001 - the parent asserts on the type
        outcome = (type(exc).__name__, str(exc))
    conn.send((*outcome, time.perf_counter() - started))


def in_child(fn, *args, deadline: float = 60.0):
    """(exception type name or 'ok', message, seconds) of ``fn(*args)`` in a forked child."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args))
    proc.start()
    try:
        if not parent.poll(deadline):
            pytest.fail(f"{fn.__name__}{args!r:.80} did not finish within {deadline:.0f} s")
        return parent.recv()
    finally:
        proc.kill()
        proc.join()


def write(tmp_path: Path, text: str, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_billion_laughs_protocol_fails_in_one_line_fast(tmp_path):
    path = write(tmp_path, protocol_text(laughs()))
    assert len(path.read_bytes()) < 1000
    kind, message, seconds = in_child(load_protocol, path)
    assert kind == "ProtocolErrors" and seconds < GUARD_S
    assert message == f"{path}:11: more than 200,000 values once its aliases are expanded (YAML anchors/aliases " \
                      "repeat a value; write less, or split the file)"


def test_a_self_referencing_alias_is_one_line_not_a_traceback(tmp_path):
    path = write(tmp_path, protocol_text("    loop: &me [*me]"))
    kind, message, seconds = in_child(load_protocol, path)
    assert kind == "ProtocolErrors" and seconds < GUARD_S
    assert message == f"{path}:6: YAML alias '*me' is inside the value it names (a value that contains itself)"


def test_aliases_and_merge_keys_within_the_bound_still_load(tmp_path):
    """Anchors stay allowed (protocols/mcp_git.yaml shares one env that way): only the size is bounded."""
    text = PROTOCOL.replace("  params:\n{params}\n", "  params: &p {{hops: [2]}}\n").replace(
        "  - {{name: a, role: id, suite: wiki}}", "  - {{name: a, role: id, suite: wiki, params: *p}}")
    text = text.format(n=2, samples=1) + "limits:\n  <<: {max_turns: 3}\n"
    protocol = load_protocol(write(tmp_path, text))
    assert protocol.test[0].params == {"hops": [2]} and protocol.limits.max_turns == 3
    laughs_within = protocol_text(laughs(levels=4, width=9))  # 9**4 leaves: under the bound
    kind, message, seconds = in_child(load_protocol, write(tmp_path, laughs_within, "ok.yaml"))
    assert kind == "ProtocolErrors" and "unknown field" in message and "expanded" not in message  # read, then judged
    assert seconds < GUARD_S


def test_deep_nesting_is_one_line(tmp_path):
    deep = "    deep: " + "[" * 5000 + "]" * 5000
    kind, message, seconds = in_child(load_protocol, write(tmp_path, protocol_text(deep)))
    assert kind == "ProtocolErrors" and "nested deeper than 64 levels" in message and "\n" not in message
    assert seconds < GUARD_S


def test_the_validate_command_says_one_line(tmp_path, cli):
    path = write(tmp_path, protocol_text(laughs()))

    def validate():
        proc = cli("validate", str(path))
        return proc.returncode, proc.stderr

    kind, message, seconds = in_child(validate)
    assert kind == "ok" and seconds < GUARD_S
    code, stderr = eval(message)
    assert code == 2 and stderr.strip().count("\n") == 0 and "once its aliases are expanded" in stderr


@pytest.mark.parametrize("field,text", [
    ("tasks.test.n", protocol_text(n=1_000_000_000)),
    ("samples", protocol_text(samples=1_000_000)),
])
def test_huge_task_counts_and_samples_are_one_line_before_anything_is_built(tmp_path, field, text):
    import topoeval

    path = write(tmp_path, text)
    kind, message, seconds = in_child(topoeval.run_protocol, str(path), ["oracle"], str(tmp_path / "run"))
    assert kind == "ProtocolErrors" and seconds < GUARD_S, message
    assert "less than or equal to" in message and "\n" not in message and field.split(".")[-1] in message
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option,value,bound", [("--tasks", "1000000000", MAX_TASKS),
                                                ("--samples", "1000000", MAX_SAMPLES)])
def test_cli_overrides_are_bounded(tmp_path, cli, option, value, bound):
    def run():
        proc = cli("run", "wiki_hops", "-m", "oracle", "--out", str(tmp_path / "run"), option, value)
        return proc.returncode, proc.stderr

    kind, message, seconds = in_child(run)
    assert kind == "ok" and seconds < GUARD_S
    code, stderr = eval(message)
    assert code == 2 and f"{bound}" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "run").exists()


def test_the_python_api_bounds_tasks_too(tmp_path):
    import topoeval
    from topoeval.core.errors import UserError

    with pytest.raises(UserError, match="tasks: Input should be less than or equal to 100000"):
        topoeval.run_protocol("wiki_hops", ["oracle"], tmp_path / "run", tasks=1_000_000_000)


def bomb(key: str = "x", levels: int = 10) -> str:
    """A mapping entry ``key`` whose value is a billion-laughs chain (width 9, ``levels`` deep)."""
    chain = [f"l0: &l0 [{', '.join(['lol'] * 9)}]"]
    chain += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return f"{key}: {{{', '.join(chain)}}}\n"


def test_a_billion_laughs_task_file_and_overlay_are_one_line(tmp_path):
    load_mcp_suite()
    from topoeval_suite_mcp.annotations import load_overlay
    from topoeval_suite_mcp.taskfile import load_task_file

    tasks = write(tmp_path, "name: t\n" + bomb("description") + "tasks: []\n", "tasks.yaml")
    kind, message, seconds = in_child(load_task_file, tasks)
    assert kind == "ValueError" and seconds < GUARD_S
    assert message.startswith(f"{tasks}:2: more than 200,000 values once its aliases are expanded")
    overlay = write(tmp_path, bomb("tools"), "overlay.yaml")
    kind, message, seconds = in_child(load_overlay, overlay)
    assert kind == "ValueError" and seconds < GUARD_S
    assert message.startswith(f"{overlay}:1: more than 200,000 values once its aliases are expanded")


def test_a_self_referencing_suite_manifest_is_one_line(tmp_path):
    from topoeval.protocol.discovery import load_suite_folder

    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "suite.yaml").write_text("name: s\nsuite: x:Y\ntools: &t [*t]\n")
    kind, message, _ = in_child(load_suite_folder, folder)
    assert kind == "YamlRejected" and message == f"{folder / 'suite.yaml'}:3: YAML alias '*t' is inside the value it " \
                                              "names (a value that contains itself)"


def test_every_shipped_yaml_file_is_within_the_bounds():
    from topoeval.core.yamlfile import check_events

    root = Path(__file__).resolve().parents[2]
    files = [p for folder in ("protocols", "tool_suites", "tests/fixtures", "examples")
             for p in (root / folder).rglob("*.y*ml")]
    assert len(files) > 20
    for path in files:
        check_events(path.read_text(encoding="utf-8"), str(path))


# --- bytes that are not UTF-8 (issue 56) -------------------------------------------------------------

@pytest.mark.parametrize("data,where", [
    pytest.param(protocol_text().encode() + b"# caf\xe9\n", None, id="a Latin-1 byte in a comment"),
    pytest.param(protocol_text().replace("name: p", "name: caf\xe9").encode("latin-1"), None,
                 id="a Latin-1 byte in a value"),
    pytest.param(protocol_text().encode("utf-16"), "UTF-16 (little-endian)", id="UTF-16"),
    pytest.param(b"\xfe\xff" + protocol_text().encode("utf-16-be"), "UTF-16 (big-endian)", id="UTF-16-BE"),
    pytest.param(protocol_text().encode("utf-32"), "UTF-32 (little-endian)", id="UTF-32"),
])
def test_a_protocol_that_is_not_utf8_is_one_line_naming_the_file_and_byte_offset(tmp_path, cli, data, where):
    path = tmp_path / "p.yaml"
    path.write_bytes(data)
    proc = cli("validate", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith(f"{path}:")
    if where is None:  # the offset of the one byte that is not UTF-8, and its line
        offset = data.index(b"\xe9")
        line = data.count(b"\n", 0, offset) + 1
        assert f"{path}:{line}: not UTF-8: byte 0xe9 at byte offset {offset}" in proc.stderr
    else:
        assert f"the file is {where} text (a byte order mark at byte offset 0)" in proc.stderr
        assert "UTF-8 only: save it as UTF-8" in proc.stderr


def test_utf16_without_a_byte_order_mark_is_one_line_too(tmp_path, cli):
    path = tmp_path / "p.yaml"
    path.write_bytes(protocol_text().encode("utf-16-le"))
    proc = cli("validate", str(path))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert f"{path}:1: a NUL byte at byte offset 1 (UTF-16 text without a byte order mark?)" in proc.stderr


def test_a_utf8_byte_order_mark_is_still_utf8(tmp_path, cli):
    path = tmp_path / "p.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + (protocol_text() + "# caf\xe9 \u2013 fine in UTF-8\n").encode())
    proc = cli("validate", str(path))
    assert proc.returncode == 0 and f"{path}: ok" in proc.stdout, proc.stderr


def test_a_points_file_that_is_not_utf8_is_one_line(tmp_path, cli):
    path = tmp_path / "points.yaml"
    path.write_bytes(b"0: smollm2-135m  # caf\xe9\n")
    proc = cli("sweep", "wiki_hops", "--points", str(path), "--out", str(tmp_path / "sweep"))
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert f"error: --points {path}:1: not UTF-8: byte 0xe9 at byte offset 22" in proc.stderr
    assert not (tmp_path / "sweep").exists()


def load_mcp_suite() -> None:
    """Load the mcp suite as a run does (its folder becomes the package topoeval_suite_mcp); importing
    topoeval_tool_suites.mcp.* directly would shadow that package's `mcp` entry-point function."""
    from topoeval.protocol.discovery import SuiteRegistry

    SuiteRegistry().get("mcp")


if __name__ == "__main__":  # the figures the docs quote
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for label, params in (("billion laughs (9**10 leaves)", laughs()), ("self-reference", "    loop: &me [*me]"),
                              ("5000-deep nesting", "    deep: " + "[" * 5000 + "]" * 5000)):
            path = write(Path(tmp), protocol_text(params))
            kind, message, seconds = in_child(load_protocol, path)
            print(f"{label}: {len(path.read_bytes())} bytes, {kind} in {seconds * 1000:.1f} ms: {message[:90]}")



def test_a_task_file_overlay_or_suite_manifest_that_is_not_utf8_is_one_line(tmp_path):
    """Every YAML file topoeval reads goes through the same decoding: a stray byte in a task file, an overlay
    or a suite manifest is one line with its byte offset, never a UnicodeDecodeError."""
    load_mcp_suite()
    from topoeval.protocol.discovery import load_suite_folder
    from topoeval_suite_mcp.annotations import load_overlay
    from topoeval_suite_mcp.taskfile import load_task_file

    tasks = tmp_path / "tasks.yaml"
    tasks.write_bytes(b"name: t\n# caf\xe9\ntasks: []\n")
    kind, message, _ = in_child(load_task_file, tasks)
    assert kind == "ValueError" and message.startswith(f"{tasks}:2: not UTF-8: byte 0xe9 at byte offset 13"), message
    overlay = tmp_path / "overlay.yaml"
    overlay.write_bytes("tools: {}\n".encode("utf-16"))
    kind, message, _ = in_child(load_overlay, overlay)
    assert kind == "ValueError" and "UTF-16 (little-endian)" in message and message.startswith(f"{overlay}:1:")
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "suite.yaml").write_bytes(b"name: s\nsuite: x:Y\n# \xff\n")
    kind, message, _ = in_child(load_suite_folder, folder)
    assert kind == "YamlRejected" and message.startswith(f"{folder / 'suite.yaml'}:3: not UTF-8: byte 0xff"), message
