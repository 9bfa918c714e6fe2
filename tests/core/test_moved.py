"""A module path or name of 0.1.0 that moved is answered by one line naming its new place."""

import importlib
import subprocess
import sys

import pytest

from topoeval.core.moved import MOVED, MOVED_NAMES


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_names_the_new_one(old):
    with pytest.raises(ModuleNotFoundError) as exc:
        importlib.import_module(old)
    assert str(exc.value).startswith(f"{old} moved to {MOVED[old]} in topoeval 0.2.0")
    importlib.import_module(MOVED[old])  # and the new place exists


@pytest.mark.parametrize(("package", "name"), sorted(MOVED_NAMES))
def test_an_old_name_names_its_new_module(package, name):
    module = importlib.import_module(package)
    with pytest.raises(ImportError, match=f"{package}.{name} moved to {MOVED_NAMES[package, name]}.{name}"):
        exec(f"from {package} import {name}", {})
    assert hasattr(importlib.import_module(MOVED_NAMES[package, name]), name)
    assert not hasattr(module, "no_such_name")  # other names: a plain AttributeError


def test_a_third_party_suite_of_0_1_sees_one_line():
    proc = subprocess.run([sys.executable, "-c", "from topoeval.messages import final"], capture_output=True, text=True)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1
    assert last == ("ModuleNotFoundError: topoeval.messages moved to topoeval.core.messages in topoeval 0.2.0 (see "
                    "docs/architecture.md, 'What moved after 0.1.0'; docs/writing-a-suite.md lists the imports a suite needs)")


def test_real_modules_are_found_before_the_moved_finder():
    from topoeval.protocol import loader

    assert loader.__name__ == "topoeval.protocol.loader"
