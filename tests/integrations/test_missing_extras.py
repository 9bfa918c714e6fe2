"""Each framework adapter without its extra: one clear line naming the extra, never a traceback."""

import importlib
import subprocess
import sys

import pytest

from topoeval.core.errors import UserError

ADAPTERS = [("topoeval.integrations.openenv", ["openenv", "openenv.core"], "openenv"),
            ("topoeval.integrations.verifiers", ["verifiers", "verifiers.v1"], "verifiers"),
            ("topoeval.integrations.inspect", ["inspect_ai"], "inspect"),
            ("topoeval.integrations.verl", ["verl", "verl.experimental.agent_loop.agent_loop"], "verl"),
            ("topoeval.integrations.skyrl", ["skyrl_gym", "skyrl_gym.envs.base_text_env"], "skyrl")]


@pytest.mark.parametrize("module,packages,extra", ADAPTERS, ids=[a[2] for a in ADAPTERS])
def test_adapter_without_its_package_names_the_extra(module, packages, extra, monkeypatch):
    for name in packages:
        monkeypatch.setitem(sys.modules, name, None)  # import of it fails
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(UserError, match=rf"needs the '{extra}' extra.*pip install 'topoeval\[{extra}\]'"):
        importlib.import_module(module)


def test_serve_openenv_without_the_extra_is_one_line():
    code = ("import sys; sys.modules['openenv'] = None; sys.argv = ['topoeval', 'serve-openenv', '--port', '0']; "
            "from topoeval.cli import main; main()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in out.stderr and "topoeval[openenv]" in out.stderr
