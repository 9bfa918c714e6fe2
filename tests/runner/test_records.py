"""The episode record model: what every reader checks a line against before it uses it."""

import pytest

from tests.runner.episode_records import episode, key_of
from topoeval.runner.records import is_episode_record, record_problem


def test_a_record_the_run_writes_is_an_episode_record_and_extra_fields_are_allowed():
    assert record_problem(episode("t1")) is None
    assert is_episode_record(episode("t1", usage={"prompt_tokens": 3}, something_new=[1, 2]))


@pytest.mark.parametrize(("record", "why"), [
    ({"key": key_of("t1")}, "episode_id: Field required"),
    (episode("t1", scores=None), "scores: Input should be a valid dictionary"),
    (episode("t1", messages="x"), "messages: Input should be a valid list"),
    (episode("t1", messages=["x"]), "messages: item 0 is not an object"),
    (episode("t1", scores={"success": "yes"}), "scores.success is not a number"),
    (episode("t1", sample="0"), "sample: Input should be a valid integer"),
    ({**episode("t1"), "key": "no-bars"}, "key is not model|baseline|topology|task_id|sample"),
    ({**episode("t1"), "key": 7}, "no string key"),
    ({**episode("t1"), "model": "other"}, "key is not model|baseline|topology|task_id|sample"),
    ([episode("t1")], "not an object"),
])
def test_a_malformed_or_foreign_record_is_named_in_a_few_words(record, why):
    problem = record_problem(record)
    assert problem is not None and why in problem and "\n" not in problem
    assert not is_episode_record(record)



@pytest.mark.parametrize(("record", "problem"), [
    ([episode("t1")], "not an episode record (not an object)"),
    ({**episode("t1"), "key": 7}, "not an episode record (no string key)"),
    ({**episode("t1"), "role": 5}, "not an episode record (role: Input should be a valid string)"),
    ({**episode("t1"), "model": "other"},  # the whole record's check: no field to name
     "not an episode record (key is not model|baseline|topology|task_id|sample of the record)"),
])
def test_the_problem_is_one_line_in_these_exact_words(record, problem):
    assert record_problem(record) == problem


def test_a_record_too_deep_to_check_is_a_problem_not_a_crash(monkeypatch):
    from topoeval.runner.records import EpisodeRecord

    def too_deep(cls, record):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(EpisodeRecord, "model_validate", classmethod(too_deep))
    assert record_problem(episode("t1")) == "not an episode record (nested too deep)"
