"""topoeval publish: the dry-run folder is a loadable dataset with a valid card; uploads go through
huggingface_hub to a local recording server (the real Hub cannot be reached from here), merge
with what the repo holds, survive 5xx answers, and never show the token."""

import os
import subprocess
from pathlib import Path

import datasets
import pytest
from huggingface_hub import DatasetCard

import topoeval
from topoeval.core.policy import Policy
from topoeval.policies.reference import OraclePolicy
from topoeval.core.parquet import read_rows
from topoeval.publish import publish

from .hub_server import FakeHub

TOKEN = "hf_topoevalTestToken0123456789"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    first = topoeval.run_protocol("wiki_hops", ["oracle", "noop"], base / "a", tasks=2, shots=[0]).run_dir
    again = topoeval.run_protocol("wiki_hops", ["oracle"], base / "b", tasks=2, shots=[0]).run_dir  # same task set
    bigger = topoeval.run_protocol("wiki_hops", ["oracle"], base / "c", tasks=3, shots=[0]).run_dir  # another task set
    return first, again, bigger


def load(folder, config_file):
    return datasets.load_dataset("parquet", data_files=str(Path(folder) / config_file), split="train")


def test_dry_run_folder_is_a_dataset_with_a_valid_card(runs, tmp_path):
    out = tmp_path / "stage"
    done = publish([runs[0]], "org/board", dry_run=out, offline=True)
    assert not done["uploaded"] and (out / "README.md").is_file()
    results = load(out, "data/results.parquet")
    row = results[0]
    assert {"protocol", "model", "baseline", "topology", "metric", "mean", "std", "ci_low", "ci_high", "n",
            "pass_at_k", "pass_hat_k", "protocol_sha256", "task_set_sha256", "topoeval_version", "date"} <= set(row)
    success = [r for r in results if r["metric"] == "success" and r["model"] == "oracle"]
    assert success and all(r["mean"] == 1.0 and r["n"] == 2 for r in success)
    assert "--tasks 2" in success[0]["reproduce"] and "--shots 0" in success[0]["reproduce"]
    episodes = datasets.load_dataset("parquet", data_files=str(out / "episodes/**/*.parquet"), split="train")
    assert episodes.num_rows == 2 * 3 * 2  # models x topologies x tasks
    card = DatasetCard.load(out / "README.md")
    configs = {c["config_name"]: c for c in card.data.to_dict()["configs"]}
    assert set(configs) == {"results", "latest", "episodes"} and configs["results"]["default"]
    text = card.text
    assert "## wiki_hops" in text and text.index("| oracle |") < text.index("| noop |")  # sorted by OOD success


def test_upload_merges_replaces_same_key_and_keeps_a_latest_view(runs):
    first, again, bigger = runs
    with FakeHub() as hub:
        publish([first], "org/board", endpoint=hub.url, retry_wait=0.01)
        n_first = len(read_results_from(hub))
        done = publish([again], "org/board", endpoint=hub.url, retry_wait=0.01)
        assert done["merged_rows"] == n_first
        rows = read_results_from(hub)
        assert len(rows) == n_first  # oracle's rows replaced, noop's kept
        assert {r["run_id"] for r in rows if r["model"] == "oracle"} == {Path(again).name}
        assert {r["model"] for r in rows} == {"oracle", "noop"}
        publish([bigger], "org/board", endpoint=hub.url, retry_wait=0.01)
        rows = read_results_from(hub)
        assert len({r["task_set_sha256"] for r in rows}) == 2  # another task set: added, not replaced
        latest_rows = read_file(hub, "data/latest.parquet")
        keys = [(r["protocol"], r["model"], r["baseline"], r["topology"], r["metric"]) for r in latest_rows]
        assert len(keys) == len(set(keys))
        assert len(hub.commits) == 3 and all("README.md" in c["files"] for c in hub.commits)


def test_5xx_answers_are_retried(runs):
    with FakeHub() as hub:
        hub.fail_next = [("POST", r"^/api/repos/create$", 503), ("POST", r"/commit/main$", 502)]
        done = publish([runs[0]], "org/board", endpoint=hub.url, retry_wait=0.01)
        assert done["uploaded"] and len(hub.commits) == 1
        assert [r["path"] for r in hub.requests].count("/api/repos/create") == 2
        assert sum(1 for r in hub.requests if r["path"].endswith("/commit/main")) == 2


def test_cli_uploads_with_the_env_token_and_never_shows_it(runs, tmp_path, topoeval_cmd):
    env = {**os.environ, "HF_TOKEN": TOKEN}
    with FakeHub() as hub:
        proc = subprocess.run([*topoeval_cmd, "publish", str(runs[0]), "--repo", "org/board", "--endpoint", hub.url],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "uploaded to org/board" in proc.stdout
        assert {r["auth"] for r in hub.requests} == {f"Bearer {TOKEN}"}  # the token came from the environment
        assert all(TOKEN.encode() not in r["body"] for r in hub.requests)
        out = tmp_path / "dry"
        dry = subprocess.run([*topoeval_cmd, "publish", str(runs[0]), "--repo", "org/board", "--endpoint", hub.url,
                              "--dry-run", "--out", str(out)], capture_output=True, text=True, env=env)
        assert dry.returncode == 0 and "merged with" in dry.stdout
    for text in (proc.stdout, proc.stderr, dry.stdout, dry.stderr):
        assert TOKEN not in text
    assert all(TOKEN.encode() not in p.read_bytes() for p in out.rglob("*") if p.is_file())


def read_file(hub, rel):
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"topoeval-hub-{os.getpid()}.parquet"
    path.write_bytes(hub.repos["org/board"][rel])
    try:
        return read_rows(path)
    finally:
        path.unlink()


def read_results_from(hub):
    return read_file(hub, "data/results.parquet")


def test_without_episodes_the_card_declares_only_what_is_there(runs, tmp_path):
    out = tmp_path / "lean"
    done = publish([runs[0]], "org/board", dry_run=out, offline=True, episodes=False)
    assert not (out / "episodes").exists() and not any(f.startswith("episodes/") for f in done["files"])
    configs = [c["config_name"] for c in DatasetCard.load(out / "README.md").data.to_dict()["configs"]]
    assert configs == ["results", "latest"]
    assert load(out, "data/latest.parquet").num_rows == load(out, "data/results.parquet").num_rows


class FlakyBackend(Policy):
    """The oracle behind a backend that fails on every other task: those episodes end in error."""

    name = "flaky"

    def __init__(self):
        self.oracle = OraclePolicy()

    async def act(self, messages, tools, sampling, ctx):
        if int(ctx.task.id.split("/")[-1].split("-")[0]) % 2 == 0:
            raise ConnectionError("backend down")
        return await self.oracle.act(messages, tools, sampling, ctx)


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory):
    """Models whose files differ in which columns are all null: noop never calls a tool nor commits,
    random never answers, flaky's errored episodes have no scores."""
    base = tmp_path_factory.mktemp("mixed")
    first = topoeval.run_protocol("wiki_to_travel", ["oracle", "noop", "random", FlakyBackend()], base / "a",
                                  tasks=3, shots=[0]).run_dir
    second = topoeval.run_protocol("wiki_to_travel", ["oracle-no-ask", "noop"], base / "b", tasks=4, shots=[0]).run_dir
    return first, second


def materialise(hub, folder):
    """The repo's files as a local folder (what a clone of the dataset repo holds)."""
    for rel, data in hub.repos["org/board"].items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


def test_every_config_loads_with_load_dataset_also_after_a_merge(mixed_runs, tmp_path):
    from topoeval.publish.schema import EPISODE_COLUMNS, RESULT_COLUMNS, features

    first, second = mixed_runs
    with FakeHub() as hub:
        publish([first], "org/board", endpoint=hub.url, retry_wait=0.01)
        one = materialise(hub, tmp_path / "one")
        publish([second], "org/board", endpoint=hub.url, retry_wait=0.01)  # merged onto the first
        two = materialise(hub, tmp_path / "two")
    declared = {"results": features(RESULT_COLUMNS), "latest": features(RESULT_COLUMNS),
                "episodes": features(EPISODE_COLUMNS)}
    for folder, models in ((one, {"oracle", "noop", "random", "flaky"}),
                           (two, {"oracle", "noop", "random", "flaky", "oracle-no-ask"})):
        configs = [c["config_name"] for c in DatasetCard.load(folder / "README.md").data.to_dict()["configs"]]
        assert configs == ["results", "latest", "episodes"]
        loaded = {c: datasets.load_dataset(str(folder), c, split="train", cache_dir=str(tmp_path / "cache"))
                  for c in configs}  # what the Hub's dataset viewer does
        for config, ds in loaded.items():
            assert ds.features == declared[config], config
            assert set(ds["model"]) == models, config
        eps = loaded["episodes"].to_list()
        noop = [e for e in eps if e["model"] == "noop"]
        assert noop and all(e["tool_calls"] == 0 and e["risk"] is None for e in noop)
        flaky = [e for e in eps if e["model"] == "flaky"]
        errored = [e for e in flaky if e["status"] == "error"]
        assert errored and all(e["success"] is None and "backend down" in e["errors"] for e in errored)
        assert all(e["success"] == 1.0 for e in flaky if e["status"] != "error")
        success = [r for r in loaded["results"].to_list() if r["metric"] == "success" and r["model"] == "flaky"]
        assert success and all(r["incomplete"] and r["n_errors"] == 2 and r["mean"] == 1.0 for r in success)
        assert not any(r["incomplete"] for r in loaded["results"].to_list() if r["model"] != "flaky")
    # the second publish merged: both task sets of noop, the first run's rows kept
    assert len({r["task_set_sha256"] for r in loaded["results"].to_list() if r["model"] == "noop"}) == 2
    assert "| flaky (incomplete: 4 err) |" in (two / "README.md").read_text()


def test_the_reproduce_command_carries_sampling_overrides():
    from topoeval.publish.tables import reproduce_command

    meta = {"protocol": {"name": "wiki_hops"}, "overrides": {"tasks": 2, "temperature": 0.7, "top_p": 0.9}}
    assert reproduce_command(meta, "m", "1-shot") == ("topoeval run wiki_hops --model m --shots 1 --tasks 2 "
                                                      "--temperature 0.7 --top-p 0.9")


def test_a_matrix_run_publishes_a_matrix_config_that_load_dataset_loads(tmp_path):
    """A transfer-matrix run adds ``data/matrix.parquet`` (declared as the ``matrix`` config, with its own
    schema) and a matrix table to the card; a publish of one-way runs declares no such config."""
    from topoeval.publish.schema import MATRIX_COLUMNS, features

    path = tmp_path / "m.yaml"
    path.write_text("name: m\nmatrix:\n  topologies:\n    - {name: wiki, suite: wiki}\n"
                    "    - {name: travel, suite: travel}\ntasks: {test: {n: 2}, fewshot: {n: 2}}\n")
    run = topoeval.run_protocol(str(path), ["oracle", "noop"], tmp_path / "run", trained_on=["oracle=wiki"]).run_dir
    out = tmp_path / "stage"
    done = publish([run], "org/board", dry_run=out, offline=True, episodes=False)
    assert "data/matrix.parquet" in done["files"]
    card = DatasetCard.load(out / "README.md")
    assert [c["config_name"] for c in card.data.to_dict()["configs"]] == ["results", "latest", "matrix"]
    ds = datasets.load_dataset(str(out), "matrix", split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.features == features(MATRIX_COLUMNS)
    rows = {(r["model"], r["topology"], r["metric"]): r for r in ds.to_list()}
    assert len(rows) == 2 * 2 * 2  # models x topologies x (success, dq)
    own, other = rows[("oracle", "wiki", "success")], rows[("oracle", "travel", "success")]
    assert own["own"] and own["transfer_ratio"] is None and other["transfer_ratio"] == 1.0
    assert other["reproduce"].endswith("--trained-on oracle=wiki")
    noop = rows[("noop", "travel", "success")]
    assert noop["train_topology"] is None and "not an adapter" in noop["ratio_note"]
    assert "## Transfer matrix: m" in card.text and "| oracle | 0-shot | wiki | 1.00 [1.00, 1.00] * |" in card.text


def test_greedy_and_sampled_matrices_of_one_task_set_are_published_side_by_side(tmp_path):
    """k samples at a temperature is another measurement than one greedy sample of the same tasks: neither
    replaces the other in ``results``, ``latest`` or ``matrix``, and the card has a table for each, the
    sampled one with pass@k and the zero-signal share."""
    path = tmp_path / "m.yaml"
    path.write_text("name: m\nmatrix:\n  topologies:\n    - {name: wiki, suite: wiki}\n"
                    "    - {name: travel, suite: travel}\ntasks: {test: {n: 2}, fewshot: {n: 2}}\n")
    greedy = topoeval.run_protocol(str(path), ["oracle"], tmp_path / "g", temperature=0.0).run_dir
    sampled = topoeval.run_protocol(str(path), ["oracle"], tmp_path / "s", samples=2, temperature=0.7).run_dir
    out = tmp_path / "stage"
    done = publish([greedy, sampled], "org/board", dry_run=out, offline=True)
    [one, k2] = sorted((f for f in done["files"] if f.startswith("episodes/")), key=len)
    assert k2 == one.replace(".parquet", "-k2.parquet")
    assert (len(read_rows(out / one)), len(read_rows(out / k2))) == (4, 8)  # 2 topologies x 2 tasks (x 2 samples)
    matrix = [r for r in read_rows(out / "data/matrix.parquet") if r["metric"] == "success"]
    assert sorted((r["topology"], r["samples"], r["temperature"]) for r in matrix) == [
        ("travel", 1, 0.0), ("travel", 2, 0.7), ("wiki", 1, 0.0), ("wiki", 2, 0.7)]
    by_k = {r["samples"]: r for r in matrix if r["topology"] == "wiki"}
    assert by_k[1]["pass_at_k"] is None and by_k[1]["zero_signal_share"] is None
    assert by_k[2]["pass_at_k"] == 1.0 and by_k[2]["zero_signal_share"] == 1.0  # the oracle: both samples succeed
    latest = [r for r in read_rows(out / "data/latest.parquet") if r["metric"] == "success"]
    assert sorted((r["topology"], r["samples"]) for r in latest) == [("travel", 1), ("travel", 2), ("wiki", 1),
                                                                     ("wiki", 2)]
    text = (out / "README.md").read_text()
    assert "## Transfer matrix: m, greedy (task set" in text
    assert "## Transfer matrix: m, k = 2 samples at temperature 0.7 (task set" in text
    assert "| oracle | 0-shot | — | 1.00 [1.00, 1.00]; pass@2 1.00, zero-signal 1.00 |" in text


def test_matrix_rows_published_before_samples_was_a_column_count_as_greedy():
    """A matrix row an older topoeval published has no ``samples``: it is read as one greedy sample, so a
    republish of the same greedy cell replaces it instead of standing beside it."""
    from topoeval.publish.schema import MATRIX_COLUMNS, MATRIX_DEFAULTS, conform
    from topoeval.publish.tables import MATRIX_KEY, merge

    old = {"protocol": "m", "model": "x", "baseline": "0-shot", "topology": "wiki", "metric": "success",
           "task_set_sha256": "t", "mean": 0.5}
    [conformed] = conform([old], MATRIX_COLUMNS, MATRIX_DEFAULTS)
    assert conformed["samples"] == 1 and conformed["pass_at_k"] is None
    new = conform([{**old, "samples": 1, "mean": 0.75}], MATRIX_COLUMNS, MATRIX_DEFAULTS)
    assert [r["mean"] for r in merge([conformed], new, MATRIX_KEY)] == [0.75]
