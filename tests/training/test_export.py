"""topoeval export: the train topology's tasks as a parquet dataset RL trainers load, and the
overlap check a later evaluation runs against it."""

import json

import datasets
import pytest

import topoeval
from topoeval.training.export import export_tasks


def test_export_loads_with_datasets_and_rewards_its_own_answers(tmp_path, cli):
    out = tmp_path / "exp"
    proc = cli("export", "wiki_to_travel", "--split", "train", "--tasks", "12", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    ds = datasets.load_dataset("parquet", data_files=str(out / "train.parquet"), split="train")
    assert ds.num_rows == 12
    assert set(ds.column_names) >= {"id", "prompt", "answer", "info", "tools", "topology", "data_source", "reward_model"}
    row = ds[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"] and row["topology"] == "wiki"
    info = json.loads(row["info"])
    assert info["split"] == "train" and info["topoeval_task"]["id"] == row["id"] and info["topology"]["suite"] == "wiki"
    assert {t["function"]["name"] for t in json.loads(row["tools"])} == {"search", "open_page"}
    assert topoeval.reward(row, [{"role": "assistant", "content": f"Answer: {row['answer']}"}]) == 1.0
    assert topoeval.reward(row, [{"role": "assistant", "content": "Answer: nobody"}]) == 0.0
    manifest = json.loads((out / "topoeval_export.json").read_text())
    assert manifest["n"] == 12 and len(manifest["fingerprints"]) == 12 and len(manifest["task_set_sha256"]) == 64


def test_state_tasks_export_their_expected_change_and_transformed_topologies(tmp_path):
    export_tasks("wiki_to_travel_ladder", tmp_path, split="dev", n=4, topology="travel-user")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "dev.parquet"), split="train")
    row = ds[0]
    assert "balance" in json.loads(row["answer"])
    assert json.loads(row["info"])["topology"]["transforms"] == [{"name": "refundable", "args": {}}]
    with pytest.raises(Exception, match="sets no tasks.dev"):
        export_tasks("wiki_to_travel_ladder", tmp_path, split="dev")


def test_a_run_warns_when_the_model_was_trained_on_evaluated_tasks(tmp_path):
    clean, leaked = tmp_path / "train", tmp_path / "test"
    export_tasks("wiki_hops", clean, split="train", n=20)
    export_tasks("wiki_hops", leaked, split="test", n=2)
    from topoeval.api import ContaminationWarning

    with pytest.warns(ContaminationWarning, match="trained on 2 of the evaluated tasks"):
        res = topoeval.run_protocol("wiki_hops", ["oracle"], tmp_path / "r", tasks=2, shots=[0],
                                    trained_on=[clean, leaked])
    assert json.loads((res.run_dir / "run.json").read_text())["trained_on"] == {str(clean): 0, str(leaked): 2}


def test_a_bare_suite_exports_its_default_topology(tmp_path):
    import asyncio

    from topoeval.core.policy import EpisodeContext, SamplingParams
    from topoeval.policies.registry import make_policy

    export_tasks("travel", tmp_path, split="train", n=5, seed=3)
    rows = datasets.load_dataset("parquet", data_files=str(tmp_path / "train.parquet"), split="train").to_list()
    assert [r["topology"] for r in rows] == ["travel"] * 5
    with pytest.raises(Exception, match="needs a task count, n "):
        export_tasks("travel", tmp_path / "x", split="train")
    # the oracle, driven through the env on the exported task, earns the exported row's reward of 1
    env = topoeval.make_env("travel")
    task = topoeval.core.suite.Task.model_validate(json.loads(rows[0]["info"])["topoeval_task"])
    obs, info = env.reset(options={"task": task})
    policy = make_policy("oracle")
    ctx = EpisodeContext(task=task, suite=env.topology.suite, sample=0, shots=0)
    done = False
    while not done:
        reply = asyncio.run(policy.act(info["messages"], info["tools"], SamplingParams(), ctx))
        obs, reward, terminated, truncated, info = env.step(reply.openai())
        done = terminated or truncated
    assert reward == 1.0 and topoeval.reward(rows[0], info["messages"]) == 1.0
