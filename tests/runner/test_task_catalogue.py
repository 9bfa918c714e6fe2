"""The run's tasks held as ids: one pass hashes the set as task_set_hash does, a resume reads tasks.json."""

import json

import pytest

import topoeval
from topoeval.protocol.loader import load_protocol
from topoeval.protocol.topology import resolve, task_set_hash
from topoeval.runner.task_catalogue import TASKS_JSON, build_catalogue, save_catalogue


@pytest.fixture
def topologies(echo_protocol, registry):
    proto = load_protocol(echo_protocol(n=6), registry)
    return [resolve(t, registry) for t in proto.topologies()]


def _counting(monkeypatch, topologies):
    """Count the tasks the suites make (each resolved topology's suite, whatever class it is)."""
    made = []
    for topo in topologies:
        suite = topo.suite
        real = suite.generate
        monkeypatch.setattr(suite, "generate", lambda *a, _real=real, **k: (made.append(a[-1]), _real(*a, **k))[1])
    return made


def test_one_pass_gives_task_set_hash_ids_and_tasks_made_again(topologies):
    counts = {t.name: 6 for t in topologies}
    catalogue = build_catalogue(topologies, 1, counts, fingerprints=True)
    lists = {t.name: t.tasks("test", 1, 6) for t in topologies}
    assert catalogue.sha256 == task_set_hash(lists)
    assert {name: t.ids for name, t in catalogue.topologies.items()} == {n: [x.id for x in ts] for n, ts in lists.items()}
    assert catalogue.fingerprints == {x.fingerprint() for ts in lists.values() for x in ts}
    name = topologies[0].name
    assert catalogue.topologies[name].task(4) == lists[name][4]


def test_a_resume_reads_tasks_json_and_makes_only_the_spot_checks(tmp_path, topologies, monkeypatch):
    counts = {t.name: 60 for t in topologies}
    first = build_catalogue(topologies, 1, counts, run_dir=tmp_path)
    save_catalogue(tmp_path, first)
    made = _counting(monkeypatch, topologies)
    again = build_catalogue(topologies, 1, counts, run_dir=tmp_path)
    assert again.reused and again.sha256 == first.sha256 and len(set(made)) <= 16  # spot checks, not every task
    # a recorded fingerprint that the suite no longer makes: the whole set is made and hashed again
    record = json.loads((tmp_path / TASKS_JSON).read_text())
    name = sorted(counts)[0]
    index = next(iter(record["checks"][name]))
    record["checks"][name][index] = "0" * 64
    (tmp_path / TASKS_JSON).write_text(json.dumps(record))
    made.clear()
    rebuilt = build_catalogue(topologies, 1, counts, run_dir=tmp_path)
    assert not rebuilt.reused and rebuilt.sha256 == first.sha256 and len(set(made)) == 60
    # another size is another task set
    assert not build_catalogue(topologies, 1, {t.name: 5 for t in topologies}, run_dir=tmp_path).reused


def test_a_resumed_run_does_not_make_its_finished_tasks_again(tmp_path, echo_protocol, fixture_suites, monkeypatch):
    from topoeval.core.suite import Suite

    proto, out = echo_protocol(n=5), tmp_path / "run"
    first = topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    assert (out / TASKS_JSON).exists()
    made: list[int] = []
    real = Suite.iter_tasks

    def counting_iter(self, params, split, seed, n):
        for task in real(self, params, split, seed, n):
            made.append(task.index)
            yield task

    monkeypatch.setattr(Suite, "iter_tasks", counting_iter)
    again = topoeval.run_protocol(proto, ["oracle"], out, suites_dirs=[fixture_suites])
    assert again.new_episodes == 0 and again.reused_episodes == first.new_episodes == 10
    assert made == []  # no pass over the task set: tasks.json and a few spot checks
