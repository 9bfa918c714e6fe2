"""Module paths of 0.1.0 keep working for one release, with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import sys

import pytest

from topoeval._moved import MOVED


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_old_module_path_is_the_new_module(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_from_import_of_an_old_path():
    sys.modules.pop("topoeval.env", None)
    with pytest.warns(DeprecationWarning):
        from topoeval.env import make_env  # noqa: F401  (the 0.1.0 spelling)
    from topoeval.training.env import make_env as new

    assert make_env is new


def test_protocol_schema_still_imports_from_the_package():
    from topoeval.protocol import Protocol
    from topoeval.protocol.schema import Protocol as schema_protocol

    assert Protocol is schema_protocol


def test_old_report_names_resolve_with_a_warning():
    import topoeval.report
    from topoeval.report.tables import print_success_table

    with pytest.warns(DeprecationWarning, match="report.tables"):
        assert topoeval.report.print_success_table is print_success_table
    with pytest.raises(AttributeError):
        topoeval.report.no_such_name  # noqa: B018


def test_public_api_did_not_move():
    import topoeval

    for name in ("load_protocol", "run_protocol", "RunResult", "score_episode", "reward", "make_env", "export_tasks"):
        assert callable(getattr(topoeval, name)) or isinstance(getattr(topoeval, name), type)
    assert topoeval.__version__
