import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_SUITES = Path(__file__).resolve().parent / "fixtures" / "suites"

# A suite started in the background by a non-interactive shell (`make test &`, nohup) inherits SIGINT
# ignored, and an ignored signal stays ignored across exec: the tests that interrupt a `topoeval run`
# with SIGINT would then see it run on. A handler (unlike SIG_IGN) is reset to the default on exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def fixture_suites() -> Path:
    return FIXTURE_SUITES


@pytest.fixture
def registry():
    from topoeval.protocol.discovery import SuiteRegistry

    return SuiteRegistry([FIXTURE_SUITES])


@pytest.fixture
def topoeval_cmd() -> list[str]:
    """The CLI as a subprocess command (same interpreter as the tests): for what needs a process of its
    own (exit codes of a real process, signals, a fresh interpreter's imports)."""
    return [sys.executable, "-c", "from topoeval.cli import main; main()"]


@pytest.fixture
def cli():
    """``cli(*args, env=None)``: the ``topoeval`` command in this process through ``main()`` (its
    one-line errors and exit codes included), inside typer's ``CliRunner`` isolation; returns a
    ``subprocess.CompletedProcess`` (returncode, stdout, stderr) like a subprocess run would, without
    the interpreter start and imports a subprocess pays each time."""
    import subprocess

    from typer.testing import CliRunner

    from topoeval.cli import main

    def invoke(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        argv, sigterm = sys.argv, signal.getsignal(signal.SIGTERM)
        sys.argv = ["topoeval", *map(str, args)]
        code = 0
        try:
            with CliRunner().isolation(env={"COLUMNS": "200", **(env or {})}) as streams:
                try:
                    main()
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                sys.stdout.flush()
                sys.stderr.flush()
                out, err = streams[0].getvalue().decode(), streams[1].getvalue().decode()
        finally:
            sys.argv = argv
            signal.signal(signal.SIGTERM, sigterm)  # main() installs its own
        return subprocess.CompletedProcess(["topoeval", *args], code, out, err)

    return invoke


ECHO_PROTOCOL = """\
name: echo_proto
train:
  name: echo-a
  suite: echo
test:
  - name: echo-a
    role: id
    suite: echo
    params: {{delay_s: {delay}}}
  - name: echo-b
    role: ood
    suite: echo
    params: {{delay_s: {delay}}}
tasks:
  test: {{n: {n}, seed: 1}}
  fewshot: {{n: 4, seed: 2}}
baselines: {{shots: [0]}}
samples: {samples}
"""


@pytest.fixture
def echo_protocol(tmp_path):
    def make(n=5, samples=1, delay=0.0) -> Path:
        p = tmp_path / "echo_proto.yaml"
        p.write_text(ECHO_PROTOCOL.format(n=n, samples=samples, delay=delay))
        return p

    return make
