"""ModelOptions' defaults from the environment: the local models' threads."""

import pytest

from topoeval.core.errors import UserError
from topoeval.models.options import THREADS_ENV, ModelOptions


def test_local_threads_default_to_the_environment_else_all_cores(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert ModelOptions().n_threads is None  # all cores
    monkeypatch.setenv(THREADS_ENV, "1")
    assert ModelOptions().n_threads == 1
    assert ModelOptions(n_threads=3).n_threads == 3  # given beats the environment


@pytest.mark.parametrize("value", ["x", "0", "-2", "1.5"])
def test_a_bad_thread_count_in_the_environment_is_one_line_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(UserError, match=THREADS_ENV):
        ModelOptions()
