"""``topoeval export PROTOCOL --for verl|skyrl``: a train file and one validation file per test topology,
rows named by topology (data_source) that carry what the verl loop / SkyRL env needs."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from topoeval.core.errors import UserError
from topoeval.integrations.text_episode import TextEpisode
from topoeval.integrations.topology_tasks import load_topology_tasks
from topoeval.integrations.trainer_export import export_for_trainer


def rows(path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_export_for_verl_from_the_command_line(tmp_path, cli):
    proc = cli("export", "wiki_to_travel", "--for", "verl", "--out", str(tmp_path), "--tasks", "2")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["topoeval_export.json", "train.parquet",
                                                          "val_travel.parquet", "val_wiki.parquet"]
    train, travel = rows(tmp_path / "train.parquet"), rows(tmp_path / "val_travel.parquet")
    assert {r["data_source"] for r in train} == {"wiki"} and {r["data_source"] for r in travel} == {"travel"}
    assert {r["agent_name"] for r in train + travel} == {"topoeval"}
    # the prompt column is the episode's opening, as the loop renders it; the task is the protocol's
    row = travel[1]
    ep = TextEpisode.from_row(row["extra_info"])
    assert row["prompt"] == ep.prompt_messages() and [m["role"] for m in row["prompt"]] == ["system", "user"]
    expected = load_topology_tasks("wiki_to_travel", "travel", "test").task(1)
    assert ep.task == expected and row["extra_info"]["index"] == 1 and row["extra_info"]["split"] == "test"
    assert row["reward_model"]["style"] == "rule" and row["extra_info"]["metric"] == "success"
    manifest = json.loads((tmp_path / "topoeval_export.json").read_text())
    assert manifest["for"] == "verl" and manifest["files"]["val_travel.parquet"]["n"] == 2
    # only the trained tasks count as trained-on
    assert len(manifest["fingerprints"]) == 2


def test_export_for_skyrl_rows_name_the_env_and_carry_the_task_in_extras(tmp_path):
    export_for_trainer("wiki_to_travel", tmp_path, "skyrl", train_n=1, val_n=1, metric={"success": 0.7, "dq": 0.3})
    row = rows(tmp_path / "val_wiki.parquet")[0]
    assert row["env_class"] == "topoeval" and row["reward_spec"]["method"] == "rule"
    assert json.loads(row["extra_info"]["metric"]) == {"success": 0.7, "dq": 0.3}
    assert TextEpisode.from_row(row["extra_info"]).metric == {"success": 0.7, "dq": 0.3}


def test_export_for_refuses_what_it_cannot_write(tmp_path, cli):
    proc = cli("export", "wiki_to_travel", "--for", "verl", "--out", str(tmp_path), "--topology", "travel")
    assert proc.returncode != 0 and "takes no" in proc.stderr and "Traceback" not in proc.stderr
    with pytest.raises(UserError, match="unknown reward metric"):
        export_for_trainer("wiki_to_travel", tmp_path, "verl", train_n=1, val_n=1, metric="nonsense")
    with pytest.raises(UserError, match="unknown trainer"):
        export_for_trainer("wiki_to_travel", tmp_path, "openrlhf", train_n=1, val_n=1)
