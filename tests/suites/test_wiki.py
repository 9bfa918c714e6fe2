"""The wiki suite: generated encyclopedia, tools, question families, splits, HotpotQA corpus."""

import asyncio

import pytest

from topoeval.protocol.discovery import SuiteRegistry
from topoeval.core.gold import critical_path, dag_width
from topoeval.core.policy import SamplingParams
from topoeval.policies.registry import make_policy
from topoeval.protocol.schema import Limits
from topoeval.runner.episode import run_episode
from topoeval.core.suite import SPLITS, ToolError


@pytest.fixture(scope="module")
def wiki():
    return SuiteRegistry().get("wiki")


def params(wiki, **kw):
    return wiki.parse_params({"question_types": ["single", "chain", "compare"], "hops": [2, 3, 4], **kw})


def rollout(suite, task, model):
    return asyncio.run(
        run_episode(
            policy=make_policy(model), suite=suite, task=task, system_prompt="s", demos=[], limits=Limits(),
            sampling=SamplingParams(), sample=0, shots=0, labels={},
        )
    )


def test_oracle_solves_every_task_and_noop_fails_every_task(wiki):
    p = params(wiki)
    tasks = [t for split in ("test", "train") for t in wiki.tasks(p, split, 7, 150)]
    assert {t.family for t in tasks} == {"single", "chain-2", "chain-3", "chain-4", "compare-2"}
    for task in tasks:
        assert rollout(wiki, task, "oracle")["scores"]["success"] == 1.0, task.id
        assert rollout(wiki, task, "noop")["scores"]["success"] == 0.0, task.id


def test_oracle_is_parallel_where_the_dag_allows(wiki):
    task = next(t for t in wiki.tasks(params(wiki, compare_n=3), "test", 0, 10) if t.family.startswith("compare"))
    rec = rollout(wiki, task, "oracle")
    assert rec["turns"] == 2  # one turn with three parallel calls, then the answer
    assert len(rec["calls"]) == 3 and {c["turn"] for c in rec["calls"]} == {0}


def test_gold_dag_shapes(wiki):
    for task in wiki.tasks(params(wiki), "dev", 0, 20):
        if task.family == "single":
            assert critical_path(task.gold) == 1 and dag_width(task.gold) == 1
        elif task.family.startswith("chain-"):
            depth = int(task.family.split("-")[1])
            assert critical_path(task.gold) == depth and dag_width(task.gold) == 1
            assert all(g.depends_on == [task.gold[i - 1].id] for i, g in enumerate(task.gold) if i)
        else:
            assert critical_path(task.gold) == 1 and dag_width(task.gold) == 2


def test_same_inputs_give_byte_identical_tasks(wiki):
    p = params(wiki)
    a = [t.model_dump_json() for t in wiki.tasks(p, "test", 3, 40)]
    b = [t.model_dump_json() for t in SuiteRegistry().get("wiki").tasks(p, "test", 3, 40)]
    assert a == b
    assert a != [t.model_dump_json() for t in wiki.tasks(p, "test", 4, 40)]


def test_splits_are_disjoint(wiki):
    p = params(wiki)
    prompts = {s: {t.prompt for t in wiki.tasks(p, s, 0, 200)} for s in SPLITS}
    ids = {s: {t.id for t in wiki.tasks(p, s, 0, 200)} for s in SPLITS}
    for i, a in enumerate(SPLITS):
        for b in SPLITS[i + 1 :]:
            assert not prompts[a] & prompts[b], (a, b)
            assert not ids[a] & ids[b]


def test_tools_search_and_open_page(wiki):
    task = wiki.tasks(params(wiki), "test", 0, 1)[0]
    world = wiki.make_world(task)
    title = task.gold[0].arguments["title"]
    page = world.call("open_page", {"title": title.upper()})  # titles match case-insensitively
    assert page["title"] == title and title in page["text"]
    hits = world.call("search", {"query": title})
    assert hits[0]["title"] == title and len(hits) <= 5
    assert world.call("search", {"query": "the of and"}) == []  # only stop words
    with pytest.raises(ToolError, match="No page titled"):
        world.call("open_page", {"title": title + "xyz"})


def test_bad_params_are_rejected(wiki):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        wiki.parse_params({"hops": [5]})
    with pytest.raises(ValidationError):
        wiki.parse_params({"question_types": ["riddle"]})


HOTPOT_ROWS = [
    {
        "id": f"q{i}",
        "question": f"Which city hosts the company founded by person {i}?",
        "answer": f"City{i}",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": {"title": [f"Company{i}", f"Person{i}"], "sent_id": [0, 0]},
        "context": {
            "title": [f"Person{i}", f"Company{i}", f"Distractor{i}"],
            "sentences": [
                [f"Person{i} founded Company{i}."],
                [f"Company{i} is based in City{i}."],
                ["Nothing to see here."],
            ],
        },
    }
    for i in range(40)
] + [
    {
        "id": "cmp",
        "question": "Who is older, Ann Lee or Bob Ray?",
        "answer": "Ann Lee",
        "type": "comparison",
        "level": "medium",
        "supporting_facts": {"title": ["Ann Lee", "Bob Ray"], "sent_id": [0, 0]},
        "context": {"title": ["Ann Lee", "Bob Ray"], "sentences": [["Ann Lee was born in 1900."], ["Bob Ray was born in 1950."]]},
    }
]


@pytest.fixture
def hotpot_parquet(tmp_path):
    import datasets

    path = tmp_path / "hotpot_distractor.parquet"
    datasets.Dataset.from_list(HOTPOT_ROWS).to_parquet(str(path))
    return path


def _hotpot_module():
    import importlib

    return importlib.import_module("topoeval_suite_wiki.hotpot")


def test_hotpotqa_tasks(wiki, hotpot_parquet):
    p = wiki.parse_params({"corpus": "hotpotqa", "hotpotqa_path": str(hotpot_parquet)})
    rows = _hotpot_module().load_rows(str(hotpot_parquet))
    assert sum(len(v) for v in rows.values()) == len(HOTPOT_ROWS)
    seen = set()
    for split in SPLITS:
        for task in wiki.tasks(p, split, 0, len(rows[split])):
            assert task.data["source_id"] not in seen
            seen.add(task.data["source_id"])
            assert rollout(wiki, task, "oracle")["scores"]["success"] == 1.0
            assert rollout(wiki, task, "noop")["scores"]["success"] == 0.0
            if task.family == "hotpot-bridge":
                i = task.data["source_id"][1:]
                # the paragraph that names the other title is opened first
                assert [g.arguments["title"] for g in task.gold] == [f"Person{i}", f"Company{i}"]
                assert task.gold[1].depends_on == ["h0"]
            else:
                assert dag_width(task.gold) == 2
    assert len(seen) == len(HOTPOT_ROWS)


def test_hotpotqa_errors(wiki, tmp_path):
    from topoeval.core.errors import UserError

    p = wiki.parse_params({"corpus": "hotpotqa", "hotpotqa_path": str(tmp_path / "missing.parquet")})
    with pytest.raises(UserError, match="does not exist"):
        wiki.generate(p, "test", 0, 0)
    with pytest.raises(UserError, match="needs params.hotpotqa_path"):
        wiki.generate(wiki.parse_params({"corpus": "hotpotqa"}), "test", 0, 0)
