"""What `make leaderboard` runs: the trained-model collapse in both directions, the ladder curve,
and the second direction starting from the first's response cache."""

import pytest

from topoeval.core.messages import AssistantMessage
from topoeval.models.cache import ResponseCache
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol
from topoeval.protocol.topology import resolve
from topoeval.publish import leaderboard
from topoeval.publish.leaderboard import COLLAPSE, COLLAPSE_MODELS, PlannedSweep, plan, seed_cache


def test_the_collapse_runs_base_and_both_adapters_in_both_directions_with_few_shot_baselines():
    runs = {(r.protocol, r.folder): r for r in plan()}
    for protocol in ("wiki_to_travel", "travel_to_wiki"):
        run = runs[(protocol, "collapse")]
        assert run.models == ("smollm2-135m", "smollm2-135m-wiki", "smollm2-135m-travel", "smollm2-135m-wiki-grpo")
        assert run.options["shots"] == [0, 1, 2]
        assert load_protocol(protocol).base_model == run.models[0]  # vs_base and transfer ratios are computed
        assert (protocol, "embedded") not in runs  # the base runs inside the collapse, on the same tasks
    assert runs[("travel_to_wiki", "collapse")].cache_from == "wiki_to_travel/collapse"
    assert runs[("wiki_to_travel_ladder", "trained")].models == ("smollm2-135m-wiki", "smollm2-135m-wiki-grpo")
    # the format ladder: how much of the wiki adapter's loss is the tool-call format's
    assert runs[("wiki_format_ladder", "trained")].models == ("smollm2-135m", "smollm2-135m-wiki")
    assert ("wiki_format_ladder", "reference") in runs
    assert any(s.axis == "format" for s in load_protocol("wiki_format_ladder").ladder)
    order = [(r.protocol, r.folder) for r in plan()]
    assert order.index((COLLAPSE[0], "collapse")) < order.index((COLLAPSE[1], "collapse"))
    assert set(COLLAPSE_MODELS) == set(runs[(COLLAPSE[1], "collapse")].models)


def test_both_directions_test_the_same_tasks_with_the_same_prompts_so_the_cache_carries_over():
    registry = SuiteRegistry()
    sides = []
    for name in COLLAPSE:
        protocol = load_protocol(name, registry)
        topologies = {t.name: resolve(t, registry) for t in protocol.topologies()}
        seed = protocol.tasks.test.seed
        sides.append({
            name: ([(task.id, task.prompt) for task in topo.tasks("test", seed, 12)], topo.system_prompt())
            for name, topo in topologies.items() if name in ("wiki", "travel")
        })
        assert protocol.baselines.demos_from == "target" and protocol.tasks.fewshot.seed == 12
    assert sides[0] == sides[1] and set(sides[0]) == {"wiki", "travel"}


def _cache(folder, entries):
    cache = ResponseCache(folder / "cache.sqlite")
    for key, text in entries.items():
        cache.put(key, AssistantMessage(content=text))
    cache.close()


def _read(folder):
    cache = ResponseCache(folder / "cache.sqlite")
    try:
        return {k: AssistantMessage.model_validate_json(v).content
                for k, v in cache.db.execute("SELECT key, value FROM responses")}
    finally:
        cache.close()


def test_seed_cache_adds_what_the_run_lacks_and_never_replaces_its_own(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert seed_cache(first, second) == 0  # nothing to take yet
    _cache(first, {"a": "first's a", "b": "first's b"})
    assert seed_cache(first, second) == 2
    assert _read(second) == {"a": "first's a", "b": "first's b"}
    _cache(second, {"b": "second's own b", "c": "second's c"})
    _cache(first, {"d": "first's d"})
    assert seed_cache(first, second) == 1  # only d is new; b stays the second run's
    assert _read(second) == {"a": "first's a", "b": "second's own b", "c": "second's c", "d": "first's d"}


def test_a_sweep_without_its_checkpoints_is_skipped_in_one_line_and_its_published_results_kept(
        tmp_path, monkeypatch, capsys):
    published = tmp_path / "hub" / "sweeps"
    kept = published / "sweep-smollm2-135m-wiki-grpo"
    kept.mkdir(parents=True)
    (kept / "report.md").write_text("# Transfer over training: wiki_to_travel\n\nthe committed table\n")
    monkeypatch.setattr(leaderboard, "SWEEPS", (
        PlannedSweep(str(tmp_path / "absent.json"), None, "make train METHOD=grpo"),))
    leaderboard.run_sweeps(tmp_path / "board", published)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "skipped, its committed results kept" in lines[0]
    assert "make train METHOD=grpo" in lines[0]
    assert (kept / "report.md").is_file()
    section = leaderboard.sweeps_section(published)
    assert "## Transfer over training" in section and "### smollm2-135m-wiki-grpo" in section
    assert "the committed table" in section and "# Transfer over training: wiki_to_travel" not in section


@pytest.mark.parametrize("planned", leaderboard.SWEEPS)
def test_each_planned_sweep_names_the_command_that_leaves_its_checkpoints(planned):
    assert planned.command.startswith(("make train", "topoeval train"))
    if planned.command.startswith("topoeval train") and "--method grpo" not in planned.command:
        assert "--keep-checkpoints" in planned.command  # SFT keeps only two otherwise (GRPO keeps each --save-steps)


def test_sweeps_only_rewrites_the_cards_sweep_section_and_keeps_the_rest(tmp_path, monkeypatch, capsys):
    hub = tmp_path / "hub"
    report = hub / "sweeps" / "sweep-smollm2-135m-wiki-grpo" / "report.md"
    report.parent.mkdir(parents=True)
    report.write_text("# Transfer over training: wiki_to_travel\n\nthe old table\n")
    staged = "---\nlicense: apache-2.0\n---\n# Leaderboard\n\nevery other number\n"
    (hub / "README.md").write_text(staged + leaderboard.sweeps_section(hub / "sweeps"))
    report.write_text("# Transfer over training: wiki_to_travel\n\nthe new table\n")  # as a rerun sweep leaves it
    monkeypatch.setattr(leaderboard, "SWEEPS", (
        PlannedSweep(str(tmp_path / "absent.json"), None, "make train METHOD=grpo"),))
    leaderboard.main(tmp_path, sweeps_only=True)
    card = (hub / "README.md").read_text()
    assert card.startswith(staged) and "the new table" in card and "the old table" not in card
    assert card.count("## Transfer over training") == 1
    assert "the new table" in (tmp_path / "README.md").read_text()
    assert not (tmp_path / "leaderboard").exists()  # no model run
    assert "skipped" in capsys.readouterr().out


def test_help_and_unknown_arguments_stop_before_anything_runs(monkeypatch, capsys):
    """`python -m topoeval.publish.leaderboard --help` once started the whole leaderboard (the argument was
    ignored); now it prints the usage, and an unknown argument is refused, before anything runs."""
    ran = []
    monkeypatch.setattr(leaderboard, "main", lambda **kw: ran.append(kw))
    for argv, code in ((["--help"], 0), (["--sweeps_only"], 2)):
        with pytest.raises(SystemExit) as stop:
            leaderboard.cli(argv)
        assert stop.value.code == code
    out = capsys.readouterr()
    assert "--sweeps-only" in out.out and "unrecognized arguments: --sweeps_only" in out.err
    assert ran == []
    leaderboard.cli(["--sweeps-only"])
    assert ran == [{"out": leaderboard.Path("results"), "sweeps_only": True}]


def test_the_matrix_runs_the_base_and_every_adapter_here_greedy_and_sampled_on_wiki_and_travel():
    from topoeval.models.adapters import adapter_files
    from topoeval.publish.leaderboard import MATRIX, MATRIX_MODELS
    from topoeval.runner.config import RunConfig

    runs = {(r.protocol, r.folder): r for r in plan()}
    greedy, sampled = runs[(MATRIX, "matrix")], runs[(MATRIX, "matrix-sampled")]
    here = tuple(m for m in MATRIX_MODELS if m == "smollm2-135m" or adapter_files(m)[0].is_file())
    assert greedy.models == sampled.models == here and {"smollm2-135m", "smollm2-135m-wiki"} <= set(here)
    assert greedy.options["tasks"] >= 24 and greedy.options["shots"] == [0] and greedy.options["temperature"] == 0
    assert (sampled.options["samples"], sampled.options["temperature"]) == (4, 0.7)
    assert (MATRIX, "reference") in runs
    protocol = load_protocol(MATRIX)
    kept = RunConfig(protocol=protocol, **sampled.options).effective_protocol(protocol)
    assert [t.name for t in kept.topologies()] == ["wiki", "travel"]
    # the matrix's wiki and travel cells start with the collapse's tasks and prompts: its cache answers them
    assert greedy.cache_from == f"{COLLAPSE[0]}/collapse"
    registry = SuiteRegistry()
    collapse = load_protocol(COLLAPSE[0], registry)
    mine = {t.name: resolve(t, registry) for t in protocol.topologies()}
    for t in collapse.topologies():
        theirs = resolve(t, registry)
        assert ([x.prompt for x in theirs.tasks("test", collapse.tasks.test.seed, 12)]
                == [x.prompt for x in mine[t.name].tasks("test", protocol.tasks.test.seed, 12)])
        assert theirs.system_prompt() == mine[t.name].system_prompt()


def test_only_a_part_replaces_its_rows_and_keeps_every_other_committed_row(tmp_path, monkeypatch, capsys):
    """`--only PART` reruns what a change moves: the part's rows replace the committed ones (a row of an older
    task set of the same protocol and model included), every other committed row stays, and so do the sweeps."""
    from topoeval.core.parquet import read_rows, write_rows
    from topoeval.publish.hub import RESULTS_FILE
    from topoeval.publish.leaderboard import PlannedRun
    from topoeval.publish.schema import RESULT_COLUMNS, features

    small = PlannedRun("wiki_hops", ("noop", "oracle"), "reference", {"tasks": 2})
    monkeypatch.setattr(leaderboard, "plan", lambda: [small, PlannedRun("wiki_to_travel", ("oracle",), "collapse", {})])
    sweeps = tmp_path / "hub" / "sweeps" / "sweep-x" / "report.md"
    sweeps.parent.mkdir(parents=True)
    sweeps.write_text("# Transfer over training\n\nthe sweep's table\n")
    leaderboard.main(tmp_path, only=("reference",))
    rows = read_rows(tmp_path / "hub" / RESULTS_FILE)
    assert {(r["protocol"], r["model"]) for r in rows} == {("wiki_hops", "noop"), ("wiki_hops", "oracle")}
    assert not (tmp_path / "leaderboard" / "wiki_to_travel").exists()  # the other part did not run
    other = [{**r, "protocol": "travel_to_wiki"} for r in rows]
    stale = [{**r, "task_set_sha256": "0" * 64} for r in rows if r["model"] == "oracle"]
    write_rows(rows + other + stale, tmp_path / "hub" / RESULTS_FILE, features(RESULT_COLUMNS))
    leaderboard.main(tmp_path, only=("reference",))
    after = read_rows(tmp_path / "hub" / RESULTS_FILE)
    assert sorted(map(str, after)) != sorted(map(str, rows + other + stale))
    assert [r for r in after if r["protocol"] == "travel_to_wiki"] == other  # kept as committed
    assert not any(r["task_set_sha256"] == "0" * 64 for r in after)  # the stale task set is gone
    assert len([r for r in after if r["protocol"] == "wiki_hops"]) == len(rows)
    card = (tmp_path / "hub" / "README.md").read_text()
    assert "\n## travel_to_wiki\n" in card and "\n## wiki_hops\n" in card and "the sweep's table" in card
    assert sweeps.is_file()


def test_card_only_renders_the_card_again_from_the_committed_rows_and_runs_nothing(tmp_path, monkeypatch):
    """A change to the card moves no number: `--card-only` re-renders it from the committed rows (the staged card
    exactly, as a run would stage it) and keeps the sweeps' section; no model runs, no row is rewritten."""
    from topoeval.publish.hub import RESULTS_FILE
    from topoeval.publish.leaderboard import PlannedRun

    sweeps = tmp_path / "hub" / "sweeps" / "sweep-x" / "report.md"
    sweeps.parent.mkdir(parents=True)
    sweeps.write_text("# Transfer over training\n\nthe sweep's table\n")
    monkeypatch.setattr(leaderboard, "plan", lambda: [PlannedRun("wiki_hops", ("noop", "oracle"), "reference",
                                                                 {"tasks": 2})])
    leaderboard.main(tmp_path, only=("reference",))
    card = tmp_path / "hub" / "README.md"
    staged, results = card.read_text(), (tmp_path / "hub" / RESULTS_FILE).read_bytes()
    card.write_text("an old card's layout\n")
    monkeypatch.setattr(leaderboard, "run_protocol", lambda *a, **k: pytest.fail("--card-only ran a model"))
    leaderboard.cli(["--card-only", "--out", str(tmp_path)])
    assert card.read_text() == staged and "the sweep's table" in staged
    assert (tmp_path / "README.md").read_text() == leaderboard.results_readme(staged)
    assert (tmp_path / "hub" / RESULTS_FILE).read_bytes() == results


def test_card_only_without_committed_results_is_one_line(tmp_path):
    from topoeval.core.errors import UserError

    with pytest.raises(UserError, match="no committed results"):
        leaderboard.main(tmp_path, card_only=True)


def test_an_unknown_part_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(leaderboard, "plan", lambda: pytest.fail("nothing may be planned"))
    with pytest.raises(SystemExit) as stop:
        leaderboard.main(tmp_path, only=("referenec",))
    assert "unknown leaderboard part(s) referenec" in str(stop.value) and "reference" in str(stop.value)
    with pytest.raises(SystemExit):
        leaderboard.cli(["--only", "nope"])
    assert not (tmp_path / "leaderboard").exists()


def test_the_tau2_part_is_skipped_in_one_line_where_its_extra_is_missing_and_its_rows_are_kept(
        tmp_path, monkeypatch, capsys):
    from topoeval.core.parquet import read_rows, write_rows
    from topoeval.publish.hub import RESULTS_FILE
    from topoeval.publish.leaderboard import TAU2, PlannedRun
    from topoeval.publish.schema import RESULT_COLUMNS, features

    small = PlannedRun("wiki_hops", ("oracle",), "reference", {"tasks": 2})
    tau2 = PlannedRun(TAU2, ("oracle",), "reference", {"tasks": 2})
    monkeypatch.setattr(leaderboard, "plan", lambda: [small, tau2])
    monkeypatch.setattr(leaderboard, "missing_extra", lambda item: "no tau2 here" if item.protocol == TAU2 else None)
    leaderboard.main(tmp_path, only=("reference",))
    rows = read_rows(tmp_path / "hub" / RESULTS_FILE)
    committed = [{**r, "protocol": TAU2} for r in rows]
    write_rows(rows + committed, tmp_path / "hub" / RESULTS_FILE, features(RESULT_COLUMNS))
    leaderboard.main(tmp_path)  # the whole leaderboard: τ²'s committed rows survive its skip
    out = capsys.readouterr().out
    assert f"{TAU2} (reference): skipped, its committed rows kept (no tau2 here)" in out
    after = read_rows(tmp_path / "hub" / RESULTS_FILE)
    assert [r for r in after if r["protocol"] == TAU2] == committed
    assert {r["protocol"] for r in after} == {"wiki_hops", TAU2}


def test_each_planned_run_belongs_to_a_part_and_the_new_parts_are_planned():
    from topoeval.publish.leaderboard import AXIS_MATRIX, PARTS, TAU2

    runs = plan()
    assert {r.part for r in runs} == set(PARTS)
    axis = [r for r in runs if r.part == "axis_matrix"]
    assert {r.folder for r in axis} == {"reference", "wiki-adapters"} and all(r.protocol == AXIS_MATRIX for r in axis)
    tau2 = [r for r in runs if r.part == "tau2"]
    assert {r.protocol for r in tau2} == {TAU2} and [r.folder for r in tau2] == ["reference", "models"]
    text = (leaderboard.Path(__file__).parents[2] / "protocols" / f"{TAU2}.yaml").read_text()
    assert "{domain: telecom, solo: true}" in text and "airline" not in text  # no customer: no user model
