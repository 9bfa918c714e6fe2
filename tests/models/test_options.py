"""ModelOptions' defaults from the environment: the local models' threads and saved prefix states."""

import pytest

from topoeval.core.errors import UserError
from topoeval.models.options import PREFIX_STATES_ENV, THREADS_ENV, ModelOptions


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


def test_saved_prefix_states_are_on_unless_the_environment_turns_them_off(monkeypatch):
    monkeypatch.delenv(PREFIX_STATES_ENV, raising=False)
    assert ModelOptions().local_prefix_states is True
    monkeypatch.setenv(PREFIX_STATES_ENV, "0")
    assert ModelOptions().local_prefix_states is False
    assert ModelOptions(local_prefix_states=True).local_prefix_states is True  # given beats the environment
    monkeypatch.setenv(PREFIX_STATES_ENV, "yes")
    with pytest.raises(UserError, match=PREFIX_STATES_ENV):
        ModelOptions()
