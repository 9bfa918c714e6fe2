"""Each model's own topology in a matrix run: from its adapter's training record, ``--trained-on
MODEL=TOPOLOGY``, or none; the axes each topology is compared on; ``--topology`` keeps some."""

import pytest

from topoeval.core.errors import UserError
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol
from topoeval.protocol.topology import resolve
from topoeval.runner.config import RunConfig
from topoeval.runner.matrix import topology_axes, train_topologies


@pytest.fixture(scope="module")
def matrix():
    return load_protocol("transfer_matrix")


def test_the_shipped_adapters_training_records_give_their_own_topology_and_the_base_has_none(matrix):
    got = train_topologies(matrix, ["smollm2-135m", "smollm2-135m-wiki", "smollm2-135m-travel",
                                    "smollm2-135m-wiki-grpo", "oracle"], {})
    assert {m: g["topology"] for m, g in got.items()} == {
        "smollm2-135m": None, "smollm2-135m-wiki": "wiki", "smollm2-135m-travel": "travel",
        "smollm2-135m-wiki-grpo": "wiki", "oracle": None}
    assert got["smollm2-135m-wiki"]["source"] == "training record smollm2-135m-wiki.json"
    assert "not an adapter" in got["smollm2-135m"]["why"]


def test_a_record_whose_topology_has_another_name_matches_by_its_declaration(matrix, tmp_path, monkeypatch):
    """An adapter trained on wiki_to_travel's 'wiki' still finds a matrix topology declared the same way
    under another name; one trained on a topology the matrix lacks gets none, with the reason."""
    import json
    import shutil

    from topoeval.models import adapters

    renamed = matrix.model_copy(update={"matrix": matrix.matrix.model_copy(update={"topologies": [
        t.model_copy(update={"name": "encyclopedia"}) if t.name == "wiki" else t for t in matrix.matrix.topologies]})})
    got = train_topologies(renamed, ["smollm2-135m-wiki"], {})["smollm2-135m-wiki"]
    assert got["topology"] == "encyclopedia" and "its protocol's train topology 'wiki'" in got["source"]
    # a user's adapter trained on a topology of wiki_hops
    record = json.loads((adapters.ADAPTERS_DIR / "smollm2-135m-wiki.json").read_text())
    record.update(protocol="wiki_hops", train_topology="wiki-1-2hop")
    (tmp_path / "smollm2-135m-hops.json").write_text(json.dumps(record))
    shutil.copyfile(adapters.ADAPTERS_DIR / "smollm2-135m-wiki.gguf", tmp_path / "smollm2-135m-hops.gguf")
    monkeypatch.setenv(adapters.ENV, str(tmp_path))
    got = train_topologies(matrix, ["smollm2-135m-hops"], {})["smollm2-135m-hops"]
    assert got["topology"] is None and "'wiki-1-2hop' (protocol wiki_hops) is none of this matrix's" in got["why"]


def test_trained_on_takes_model_equals_topology_beside_export_folders(matrix, tmp_path):
    config = RunConfig(protocol="transfer_matrix", models=["oracle"], trained_on=["oracle=travel", str(tmp_path)])
    assert config.train_topologies == {"oracle": "travel"} and config.trained_on == [tmp_path]
    assert train_topologies(matrix, ["oracle"], config.train_topologies)["oracle"] == {
        "topology": "travel", "source": "--trained-on"}
    with pytest.raises(UserError, match="the matrix has no topology 'travl' \\(did you mean 'travel'\\?\\)"):
        train_topologies(matrix, ["oracle"], {"oracle": "travl"})
    with pytest.raises(UserError, match="'orcle' is not a model of this run"):
        train_topologies(matrix, ["oracle"], {"orcle": "wiki"})
    with pytest.raises(UserError, match="is not a matrix"):
        train_topologies(load_protocol("wiki_hops"), ["oracle"], {"oracle": "wiki"})
    with pytest.raises(UserError, match="give MODEL=TOPOLOGY"):
        RunConfig(protocol="transfer_matrix", trained_on=["oracle="])


def test_topology_axes_read_each_descriptor_and_the_format_a_transform_sets(matrix):
    registry = SuiteRegistry()
    axes = {t.name: topology_axes(resolve(t, registry)) for t in matrix.topologies() if t.suite in ("wiki", "travel")}
    assert axes["wiki-hermes"] == {**axes["wiki"], "format": "hermes"}
    differ = {a for a in axes["wiki"] if axes["wiki"][a] != axes["travel"][a]}
    assert differ == {"state", "reversibility", "user", "ordering", "schema", "answer_channel"}


def test_topology_keeps_some_of_a_matrix_and_refuses_what_it_cannot(matrix):
    kept = RunConfig(protocol=matrix, topologies=["travel", "wiki"]).effective_protocol(matrix)
    assert [t.name for t in kept.topologies()] == ["wiki", "travel"]  # the protocol's order
    assert RunConfig(protocol=matrix, topologies=["travel", "wiki"]).overrides()["topologies"] == ["travel", "wiki"]
    with pytest.raises(UserError, match="no such topology \\(did you mean 'wiki'\\?\\)"):
        RunConfig(protocol=matrix, topologies=["wikki", "travel"]).effective_protocol(matrix)
    with pytest.raises(UserError, match="a matrix needs at least 2"):
        RunConfig(protocol=matrix, topologies=["wiki"]).effective_protocol(matrix)
    with pytest.raises(UserError, match="not one"):
        RunConfig(protocol="wiki_hops", topologies=["wiki"]).effective_protocol(load_protocol("wiki_hops"))


def test_a_sharded_matrix_run_merges_into_the_matrix_an_unsharded_run_writes(tmp_path):
    import topoeval
    from topoeval.api import merge_runs

    path = tmp_path / "m.yaml"
    path.write_text("name: m\nmatrix:\n  topologies:\n    - {name: wiki, suite: wiki}\n"
                    "    - {name: travel, suite: travel}\ntasks: {test: {n: 3}, fewshot: {n: 2}}\n")
    models, settings = ["oracle-no-ask", "noop"], {"trained_on": ["oracle-no-ask=travel"]}
    for shard in ("1/2", "2/2"):
        topoeval.run_protocol(str(path), models, tmp_path / "sharded", shard=shard, **settings)
    merged = merge_runs([tmp_path / "sharded"]).summary["matrix"]
    whole = topoeval.run_protocol(str(path), models, tmp_path / "whole", **settings).summary["matrix"]
    assert merged["rows"][0]["train_topology"] == "travel" and merged["rows"][1]["train_topology"] is None
    assert merged == whole


def test_a_protocol_file_an_adapters_record_names_is_never_loaded(matrix, tmp_path, monkeypatch):
    """A record naming a protocol file (not a shipped name) gives no topology, and nothing that file names runs."""
    import json
    import shutil
    import sys

    from topoeval.models import adapters

    marker = tmp_path / "ran"
    hostile = tmp_path / "hostile.yaml"
    server = {"command": [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]}
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text(json.dumps({"name": "t", "tasks": [{"name": "t", "instruction": "Hi.", "answer": "hi"}]}))
    mcp = {"suite": "mcp", "params": {"server": server, "tasks": str(tasks)}}
    hostile.write_text(json.dumps({"name": "hostile", "train": {"name": "x", **mcp},
                                   "test": [{"name": "x", "role": "id", **mcp}], "tasks": {"test": {"n": 1}}}))
    record = json.loads((adapters.ADAPTERS_DIR / "smollm2-135m-wiki.json").read_text())
    record.update(protocol=str(hostile), train_topology="x")
    (tmp_path / "smollm2-135m-x.json").write_text(json.dumps(record))
    shutil.copyfile(adapters.ADAPTERS_DIR / "smollm2-135m-wiki.gguf", tmp_path / "smollm2-135m-x.gguf")
    monkeypatch.setenv(adapters.ENV, str(tmp_path))
    got = train_topologies(matrix, ["smollm2-135m-x"], {})["smollm2-135m-x"]
    assert not marker.exists()
    assert got["topology"] is None and "its protocol is not a shipped one" in got["why"]
