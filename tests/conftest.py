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
    """The CLI as a subprocess command (same interpreter as the tests)."""
    return [sys.executable, "-c", "from topoeval.cli import main; main()"]


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
