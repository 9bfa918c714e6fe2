"""What `make leaderboard` runs: the trained-model collapse in both directions, the ladder curve,
and the second direction starting from the first's response cache."""

from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol
from topoeval.protocol.topology import resolve
from topoeval.publish.leaderboard import COLLAPSE, COLLAPSE_MODELS, plan, seed_cache


def test_the_collapse_runs_base_and_both_adapters_in_both_directions_with_few_shot_baselines():
    runs = {(r.protocol, r.folder): r for r in plan()}
    for protocol in ("wiki_to_travel", "travel_to_wiki"):
        run = runs[(protocol, "collapse")]
        assert run.models == ("smollm2-135m", "smollm2-135m-wiki", "smollm2-135m-travel")
        assert run.options["shots"] == [0, 1, 2]
        assert load_protocol(protocol).base_model == run.models[0]  # vs_base and transfer ratios are computed
        assert (protocol, "embedded") not in runs  # the base runs inside the collapse, on the same tasks
    assert runs[("travel_to_wiki", "collapse")].cache_from == "wiki_to_travel/collapse"
    assert runs[("wiki_to_travel_ladder", "trained")].models == ("smollm2-135m-wiki",)
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


def test_seed_cache_copies_once_and_never_overwrites(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert not seed_cache(first, second)  # nothing to copy yet
    first.mkdir()
    (first / "cache.sqlite").write_bytes(b"first")
    assert seed_cache(first, second)
    assert (second / "cache.sqlite").read_bytes() == b"first"
    (second / "cache.sqlite").write_bytes(b"grown since")
    assert not seed_cache(first, second)
    assert (second / "cache.sqlite").read_bytes() == b"grown since"
