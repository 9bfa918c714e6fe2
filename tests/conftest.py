import os
import signal
import sys
from pathlib import Path

import pytest

from topoeval.models.options import THREADS_ENV

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_SUITES = Path(__file__).resolve().parent / "fixtures" / "suites"

# A suite started in the background by a non-interactive shell (`make test &`, nohup) inherits SIGINT
# ignored, and an ignored signal stays ignored across exec: the tests that interrupt a `topoeval run`
# with SIGINT would then see it run on. A handler (unlike SIG_IGN) is reset to the default on exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Under pytest-xdist a llama-server runs beside a second worker: with a thread per core its threads,
# which spin while they wait for each other, lose the core the worker holds (the files that start one
# ran 3-6 times slower than alone). One thread leaves that core to the worker.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault(THREADS_ENV, "1")


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


#: Test tasks per topology of :func:`collateral_run`.
COLLATERAL_TASKS = 3


@pytest.fixture(scope="session")
def collateral_run(tmp_path_factory) -> Path:
    """A run folder of wiki_to_travel with the oracle and oracle-collateral, 0 shots, :data:`COLLATERAL_TASKS`
    tasks: travel defines a collateral scope, wiki none. Shared by the report and Hub row tests: read it only."""
    import topoeval

    out = tmp_path_factory.mktemp("collateral") / "run"
    topoeval.run_protocol("wiki_to_travel", ["oracle", "oracle-collateral"], out, tasks=COLLATERAL_TASKS, shots=[0])
    return out


#: The test files that start llama-server (each has a ``local_model`` test; collection checks the list).
#: Under pytest-xdist they share one worker, in turn: two servers, whose threads spin on every core, ran
#: at once in a trial with plain ``--dist loadfile`` and a 2-minute file took over 6.
LLAMA_SERVER_FILES = (
    "tests/commands/test_sweep.py", "tests/formats/test_embedded_formats.py", "tests/models/test_adapters.py",
    "tests/models/test_llama_server.py", "tests/models/test_llama_server_faults.py",
    "tests/models/test_llama_server_isolation.py",
    "tests/models/test_llamacpp.py",
    "tests/models/test_llamacpp_build.py", "tests/models/test_llamacpp_template.py", "tests/models/test_weights.py",
    "tests/runner/test_identity.py", "tests/runner/test_run_concurrency.py",
    "tests/training/test_grpo.py", "tests/integrations/test_trl.py",
)


def pytest_collection_modifyitems(config, items):
    """A new file with a ``local_model`` test must join :data:`LLAMA_SERVER_FILES`."""
    files = {item.path.relative_to(ROOT).as_posix() for item in items if item.get_closest_marker("local_model")}
    if missing := sorted(files - set(LLAMA_SERVER_FILES)):
        raise pytest.UsageError(f"tests/conftest.py: add {', '.join(missing)} to LLAMA_SERVER_FILES "
                                "(files with local_model tests run on one xdist worker, in turn)")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs ``-n 2``: each file's tests on one worker (its module fixtures run once), and
    the files of :data:`LLAMA_SERVER_FILES` as one unit, so one llama-server runs at a time. (xdist's
    ``--dist loadgroup`` would do this with markers, but under pytest 9.2 it does not group.)"""
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "llama-server" if path in LLAMA_SERVER_FILES else path

    return Scheduling(config, log)
