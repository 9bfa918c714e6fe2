"""The command line: help without heavy imports, run/report/suites/protocols end to end, usage errors."""

import os
import subprocess
import sys

import pytest


def test_help_does_not_import_litellm():
    code = (
        "import sys\n"
        "from topoeval.cli import main\n"
        "sys.argv = ['topoeval', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'litellm' not in sys.modules, 'litellm imported'\n"
        "assert 'datasets' not in sys.modules, 'datasets imported'\n"
        "print('clean')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "clean" in proc.stdout and "run" in proc.stdout


def test_run_then_report(tmp_path, cli):
    out = tmp_path / "run"
    proc = cli("run", "wiki_hops", "-m", "oracle,noop", "--tasks", "3", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "(36 new episodes, 0 resumed)" in proc.stdout  # 2 models x 2 baselines x 3 topologies x 3 tasks
    rep = cli("report", str(out))
    assert rep.returncode == 0
    assert "wiki-3-4hop [ood]" in rep.stdout and "oracle" in rep.stdout and "1.00" in rep.stdout


def test_report_on_missing_folder_is_one_line(tmp_path, cli):
    proc = cli("report", str(tmp_path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_unknown_protocol_is_one_line(cli):
    proc = cli("run", "wiki_hop", "-m", "oracle")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: unknown protocol 'wiki_hop' (did you mean 'wiki_hops'?)"


def test_suites_lists_shipped_and_external(fixture_suites, cli):
    proc = cli("suites", "--suites-dir", str(fixture_suites))
    assert proc.returncode == 0, proc.stderr
    assert "wiki" in proc.stdout and "echo" in proc.stdout and "stateless" in proc.stdout


def test_protocols_lists_shipped(cli):
    proc = cli("protocols")
    assert proc.returncode == 0 and "wiki_hops" in proc.stdout


def test_protocols_lists_one_whose_extra_is_missing_with_its_install_command():
    """As after a plain `pip install topoeval`: AgentDojo not installed."""
    code = ("import importlib.util, sys\n"
            "sys.modules['agentdojo'] = None\n"  # import agentdojo raises ImportError
            "find = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda name, *a: None if name.startswith('agentdojo') else find(name, *a)\n"
            "from topoeval.cli import main\n"
            "sys.argv = ['topoeval', 'protocols']\n"
            "main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"COLUMNS": "400",
                          "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "agentdojo_cross_domain" in line)
    assert "workspace (id)" in row and "not available here: the agentdojo suite needs AgentDojo" in row
    assert "'topoeval[agentdojo]'" in proc.stdout and "wiki_hops" in proc.stdout


# Usage errors: typer's own message (usage line, help hint, "Error: ..."), exit 2, never a traceback.
# Run under the lowest and the newest typer that pyproject admits (see the comment on its typer pin).
USAGE_ERRORS = [  # (arguments, words of the "Error: ..." line; click's wording varies between versions)
    (["run", "wiki_hops", "-m", "oracle", "--shards-of", "0/3"], ("No such option", "--shards-of")),
    (["run"], ("Missing argument", "PROTOCOL")),
    (["bogus"], ("No such command", "bogus")),
    (["run", "wiki_hops", "-m", "oracle", "--tasks", "0"], ("Invalid value", "--tasks")),
]


@pytest.mark.parametrize("args,words", USAGE_ERRORS, ids=["unknown-option", "missing-argument", "unknown-command",
                                                         "out-of-range"])
def test_usage_errors_are_typer_messages_with_exit_2(args, words, topoeval_cmd):
    proc = subprocess.run([*topoeval_cmd, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("Usage: ") and "--help" in lines[1], proc.stderr
    assert len(lines) == 3 and lines[-1].startswith("Error: "), proc.stderr
    assert all(w.lower() in lines[-1].lower() for w in words), proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("args", [["models"], ["--version"], ["--help"]], ids=["rich-table", "echo", "help"])
def test_a_listing_piped_into_a_reader_that_has_gone_exits_0_without_a_traceback(args, topoeval_cmd):
    """``topoeval models | head -1``: the reader closes the pipe early; the command ends quietly with 0 (rich
    and click would each turn the broken pipe into exit code 1, Python into a BrokenPipeError traceback)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the command writes anything: every write meets a broken pipe
    try:
        proc = subprocess.run([*topoeval_cmd, *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def test_docs_cli_documents_every_command_and_flag():
    """docs/cli.md and the pages it links per task (docs/cli-*.md) have a section per command naming each of
    its flags (typer's own list); docs/cli.md has the exit codes and links every one of those pages."""
    import re
    from pathlib import Path

    import typer

    from topoeval.cli import app

    docs = Path(__file__).resolve().parents[1] / "docs"
    pages = [docs / "cli.md", *sorted(docs.glob("cli-*.md"))]
    sections = {m.group(1): m.group(2) for page in pages for m in
                re.finditer(r"^## (.*)\n((?:(?!^## ).*\n?)*)", page.read_text(encoding="utf-8"), re.M)}
    hub = pages[0].read_text(encoding="utf-8")
    assert all(f"]({page.name})" in hub for page in pages[1:]), "docs/cli.md should link each docs/cli-*.md"
    missing = []
    for name, command in typer.main.get_command(app).commands.items():
        text = "".join(body for heading, body in sections.items() if f"`topoeval {name}`" in heading)
        if not text:
            missing.append(f"a '## `topoeval {name}`' section")
            continue
        for param in command.params:
            for flag in [*param.opts, *param.secondary_opts]:
                if flag.startswith("--") and f"`{flag}`" not in text:
                    missing.append(f"{name} {flag}")
    assert not missing, "docs/cli.md and docs/cli-*.md do not document: " + ", ".join(missing)
    for code in ("0", "1", "2", "3", "130"):
        assert f"\n| {code} |" in sections["Exit codes"], code


def test_help_shows_no_type_beside_a_flag():
    """typer 0.2x prints `--help <bool>`; a flag takes no value (topoeval.commands.help_format)."""
    for argv in (["--help"], ["run", "--help"]):
        code = f"import sys; from topoeval.cli import main; sys.argv = ['topoeval', *{argv!r}]; main()"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "200"})
        assert proc.returncode == 0, proc.stderr
        help_line = next(line for line in proc.stdout.splitlines() if "--help" in line and "Show this" in line)
        assert "<bool>" not in proc.stdout and "--help  " in help_line, proc.stdout
    assert "<int range>" in proc.stdout  # options that take a value keep their type
