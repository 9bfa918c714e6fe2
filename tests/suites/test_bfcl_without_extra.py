"""Without the bfcl extra the suite still lists, and using it is a one-line install hint."""

import subprocess
import sys

SCRIPT = """
import sys
sys.modules["bfcl_eval"] = None  # as if bfcl-eval were not installed
from topoeval.core.errors import UserError
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import TopologySpec
from topoeval.protocol.topology import resolve
suite = SuiteRegistry().get("bfcl")
assert suite.tools == [] and suite.manifest.topology.instructions == "sequential"
try:
    resolve(TopologySpec(name="b", suite="bfcl"), SuiteRegistry())
except UserError as exc:
    print(exc)
"""


def test_missing_extra_is_a_one_line_install_hint():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip()
    assert "\n" not in line and "pip install --no-deps bfcl-eval==2026.3.23" in line and "topoeval[bfcl]" in line
