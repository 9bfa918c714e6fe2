"""The agentdojo suite through ``topoeval run``: every task solved by the oracle (no wall-clock bound: timings vary with the machine),
byte-identical episodes across runs (frozen clock, any hash seed), the shipped protocols, the
pool-size check, and topology transforms on an AgentDojo world."""

import json
import os
import subprocess
import sys

import pytest

from topoeval.core.errors import ProtocolErrors, UserError
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol, parse_protocol

TIMING = ("wall_s", "policy_s")


def run(cmd, out, hash_seed):
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
    proc = subprocess.run([*cmd, "--out", str(out), "--no-progress"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


def episodes(folder):
    out = {}
    for line in (folder / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        for key in TIMING:
            record.pop(key)
        out[record["key"]] = json.dumps(record, sort_keys=True)
    return out


@pytest.fixture(scope="module")
def validity_run(tmp_path_factory, ):
    cmd = [sys.executable, "-c", "from topoeval.cli import main; main()", "run", "agentdojo_validity", "--model", "oracle"]
    first = tmp_path_factory.mktemp("validity") / "a"
    run(cmd, first, 1)
    return cmd, first


@pytest.mark.slow
def test_oracle_solves_all_97_tasks_through_topoeval_run(validity_run):
    _, folder = validity_run
    records = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    per_domain = {}
    for r in records:
        per_domain.setdefault(r["topology"], []).append(r["scores"]["success"])
        assert r["scores"]["dq"] == 1.0 and r["status"] == "done" and not r["errors"], r["task_id"]
    assert {d: (len(v), sum(v)) for d, v in per_domain.items()} == {
        "workspace": (40, 40), "travel": (20, 20), "banking": (16, 16), "slack": (21, 21)}


@pytest.mark.slow
def test_two_runs_give_byte_identical_episodes(validity_run, tmp_path):
    """Another process with another hash seed: the same records, emails stamped by the frozen clock."""
    cmd, first = validity_run
    run(cmd, tmp_path / "b", 2)
    a, b = episodes(first), episodes(tmp_path / "b")
    assert a.keys() == b.keys() and len(a) == 97
    assert [k for k in a if a[k] != b[k]] == []
    stamped = [r for r in map(json.loads, a.values()) if "2024-07-13T00:00:0" in json.dumps(r["state_diff"])]
    assert len(stamped) >= 19  # workspace tasks whose state holds the clock (sent emails, edited files)


def test_shipped_agentdojo_protocols_validate():
    registry = SuiteRegistry()
    for name in ("wiki_to_agentdojo", "agentdojo_cross_domain", "agentdojo_validity"):
        protocol = load_protocol(name, registry)
        assert {t.suite for t in protocol.test} >= {"agentdojo"}


PROTOCOL = """\
name: too_many
train: {{name: banking, suite: agentdojo, params: {{domain: banking}}}}
test:
  - {{name: banking, role: id, suite: agentdojo, params: {{domain: banking}}}}
  - {{name: slack, role: ood, suite: agentdojo, params: {{domain: slack}}, n_tasks: 3}}
tasks: {{test: {{n: {n}}}, fewshot: {{n: {fewshot}}}}}
baselines: {{shots: [0, 1]}}
"""


def test_a_test_count_above_the_pool_is_a_protocol_error_naming_its_size():
    registry = SuiteRegistry()
    parse_protocol(PROTOCOL.format(n=5, fewshot=2), "ok.yaml", registry)
    with pytest.raises(ProtocolErrors) as err:
        parse_protocol(PROTOCOL.format(n=6, fewshot=3), "p.yaml", registry)
    assert err.value.lines == [
        "p.yaml:4 test[0]: tasks.test.n is 6 but the test split of 'banking' (agentdojo) holds 5 tasks",
        "p.yaml:6 tasks.fewshot.n: tasks.fewshot.n is 3 but the fewshot split of 'banking' (agentdojo), "
        "where demonstrations for baselines.shots [0, 1] come from, holds 2 tasks: set tasks.fewshot.n to 2 or fewer",
    ]
    with pytest.raises(ProtocolErrors, match=r"p.yaml:5 test\[1\].n_tasks: n_tasks is 11 but the test split of "
                                             r"'slack' \(agentdojo\) holds 10 tasks"):
        parse_protocol(PROTOCOL.format(n=1, fewshot=1).replace("n_tasks: 3", "n_tasks: 11"), "p.yaml", registry)


def test_cli_tasks_override_above_the_pool_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "from topoeval.cli import main; main()", "run", "agentdojo_cross_domain",
                           "--model", "oracle", "--tasks", "12", "--out", str(tmp_path / "r")], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("error: agentdojo: the test split holds 9 tasks (travel: 20 in the domain's pool), "
                                   "12 were asked for — lower the task count (a fixed task set, not a generator)")


def test_cross_domain_demos_come_from_the_target_fewshot_split(tmp_path):
    from topoeval.api import run_protocol

    result = run_protocol("agentdojo_cross_domain", ["oracle"], tmp_path / "r", tasks=2, shots=[0, 2], progress=False)
    records = [json.loads(line) for line in (result.run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 4 * 2 * 2 and all(r["scores"]["success"] == 1.0 for r in records)
    suite = SuiteRegistry().get("agentdojo")
    for r in records:
        if r["shots"] == 2:
            params = suite.parse_params({"domain": r["topology"]})
            fewshot = {t.id for t in suite.tasks(params, "fewshot", 22, 2)}
            test = {t.id for t in suite.tasks(params, "test", 21, suite.pool_size(params, "test"))}
            assert set(r["demo_task_ids"]) <= fewshot and not set(r["demo_task_ids"]) & test


@pytest.mark.parametrize("transforms", [[{"name": "rename_tools", "args": {"seed": 1}}],
                                        [{"name": "rename_args", "args": {"seed": 1}}, {"name": "no_batch"}]])
def test_transforms_apply_to_an_agentdojo_world(transforms, tmp_path):
    from topoeval.protocol.schema import TopologySpec
    from topoeval.protocol.topology import resolve

    spec = TopologySpec(name="b", suite="agentdojo", params={"domain": "banking"}, transforms=transforms)
    topo = resolve(spec, SuiteRegistry())
    names = {t.name for t in topo.suite.tools}
    assert len(names) == 11 and ("send_money" not in names) == (transforms[0]["name"] == "rename_tools")
    import asyncio

    from topoeval.core.policy import SamplingParams
    from topoeval.policies.registry import make_policy
    from topoeval.protocol.schema import Limits
    from topoeval.runner.episode import run_episode

    for task in topo.tasks("test", 0, 5):
        rec = asyncio.run(run_episode(policy=make_policy("oracle"), suite=topo.suite, task=task, system_prompt="",
                                      demos=[], limits=Limits(max_turns=24, max_tool_calls=40), sampling=SamplingParams(),
                                      sample=0, shots=0, labels={}))
        assert rec["scores"]["success"] == 1.0 and not rec["scores"]["invalid_calls"], task.id


def test_unknown_domain_in_a_protocol_is_reported_with_its_line():
    bad = PROTOCOL.format(n=1, fewshot=1).replace("domain: slack", "domain: email")
    with pytest.raises(ProtocolErrors) as err:
        parse_protocol(bad, "p.yaml", SuiteRegistry())
    assert err.value.lines[0].startswith("p.yaml:5 test[1].params.domain: Input should be 'workspace'")
    with pytest.raises(UserError):
        SuiteRegistry().get("agentdojo").tasks(SuiteRegistry().get("agentdojo").parse_params({}), "test", 0, 19)


def test_sensitivity_bar_on_an_agentdojo_topology_uses_its_whole_split():
    """The metrics' own test on banking's test split: asked for 100 tasks it takes the 5 there are,
    and the bar holds (reckless, no-ask and no-priority have nothing to break: no user, no trade-offs)."""
    from topoeval.analysis.sensitivity import bar_violations, protocol_targets
    from topoeval.api import sensitivity_matrix as run_matrix

    registry = SuiteRegistry()
    target = next(t for t in protocol_targets(load_protocol("agentdojo_cross_domain", registry), registry)
                  if t.name.endswith("/banking"))
    matrix = run_matrix(target, 100)
    assert matrix["tasks"] == 5 and bar_violations(matrix) == []
    assert matrix["cells"]["oracle-serial"]["parallelism"]["mean"] < 1 or matrix["cells"]["oracle"]["parallelism"]["n"] == 0
    assert matrix["cells"]["oracle-redundant"]["efficiency"]["mean"] <= 0.7
