"""The collapse section, report.md and `topoeval compare`."""

import json

import pytest

import topoeval
from topoeval.analysis.collapse import build_collapse


def cell(model, baseline, topo, role, success, **dims):
    metrics = {"success": {"mean": success, "std": 0.0, "n": 10}}
    metrics.update({k: {"mean": v, "std": 0.0, "n": 10} for k, v in dims.items()})
    return {"model": model, "baseline": baseline, "topology": topo, "role": role, "metrics": metrics}


def test_collapse_numbers_by_hand():
    cells = [
        cell("m", "0-shot", "a", "id", 0.8, dq=0.9, risk=None, clarification=0.7),
        cell("m", "0-shot", "b", "ood", 0.2, dq=0.5, clarification=0.1),
        cell("m", "2-shot", "a", "id", 0.8),
        cell("m", "2-shot", "b", "ood", 0.5),
        cell("base", "0-shot", "a", "id", 0.6),
        cell("base", "0-shot", "b", "ood", 0.1),
    ]
    out = {(e["model"], e["baseline"]): e for e in build_collapse(cells, base_model="base")}
    zero = out[("m", "0-shot")]
    assert zero["S_id"] == 0.8 and zero["S_ood"] == {"b": 0.2}
    assert zero["transfer_ratio"]["b"] == pytest.approx(0.25) and zero["gap"]["b"] == pytest.approx(0.6)
    assert zero["vs_base"]["b"] == pytest.approx(0.1)
    assert zero["dimension_collapse"]["b"]["dq"] == pytest.approx(0.4)
    assert zero["dimension_collapse"]["b"]["falls_most"] == "clarification"
    assert out[("m", "2-shot")]["fewshot_recovery"]["b"] == pytest.approx(0.5)  # 0.3 of the 0.6 gap
    assert "vs_base" not in out[("base", "0-shot")]


def test_run_writes_collapse_report_md_and_compare(tmp_path, cli):
    a = topoeval.run_protocol("wiki_to_travel", ["oracle", "noop"], tmp_path / "a", tasks=3, shots=[0, 1])
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["schema"] == 6
    oracle = next(e for e in summary["collapse"] if e["model"] == "oracle" and e["baseline"] == "0-shot")
    assert oracle["S_id"] == 1.0 and oracle["gap"] == {"travel": 0.0} and oracle["transfer_ratio"] == {"travel": 1.0}
    assert all(len(c["episode_ids"]) == c["n_episodes"] for c in a.cells)
    md = (tmp_path / "a" / "report.md").read_text()
    assert "## Collapse" in md and "| oracle | 0-shot |" in md
    topoeval.run_protocol("wiki_to_travel", ["random"], tmp_path / "b", tasks=3, shots=[0, 1])
    proc = cli("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert proc.returncode == 0, proc.stderr
    assert "oracle (a)" in proc.stdout and "random (b)" in proc.stdout
    other = topoeval.run_protocol("wiki_hops", ["oracle"], tmp_path / "c", tasks=1)
    proc = cli("compare", str(tmp_path / "a"), str(other.run_dir))
    assert proc.returncode == 2 and "different protocols" in proc.stderr


def test_weakest_dimension_is_named_even_when_the_id_topology_lacks_it_and_nulls_say_why():
    """wiki_to_travel's case: wiki has only efficiency, travel has clarification too. falls_most can
    only compare efficiency; weakest names travel's lowest dimension anyway."""
    from topoeval.analysis.collapse import build_collapse

    def cell(topology, role, success, **dims):
        metrics = {"success": {"mean": success}, **{d: {"mean": v} for d, v in dims.items()}}
        return {"model": "m", "baseline": "0-shot", "topology": topology, "role": role, "metrics": metrics}

    entry = build_collapse([cell("wiki", "id", 0.0, efficiency=0.9),
                            cell("travel", "ood", 0.0, efficiency=0.95, clarification=0.1, risk=0.5)])[0]
    travel = entry["dimension_collapse"]["travel"]
    assert travel["falls_most"] is None and travel["weakest"] == {"dimension": "clarification", "mean": 0.1}
    assert entry["nulls"]["dimension_collapse.travel.falls_most"].startswith("no dimension falls")
    assert entry["nulls"]["dimension_collapse.travel.clarification"] == (
        "clarification applies on one side only: no task of the ID topology gives it a meaning")
    assert entry["nulls"]["transfer_ratio.travel"] == "S_id is 0: the ratio S_ood / S_id is undefined"
    assert "gap.travel" not in entry["nulls"]  # 0 - 0 is a number
    perfect = build_collapse([cell("wiki", "id", 1.0, efficiency=1.0), cell("travel", "ood", 1.0, efficiency=1.0)])[0]
    assert perfect["dimension_collapse"]["travel"]["weakest"] is None
    assert perfect["nulls"]["dimension_collapse.travel.weakest"] == "every dimension that applies is at 1.0"
