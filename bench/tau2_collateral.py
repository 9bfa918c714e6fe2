"""τ²'s hole, measured: the oracle and oracle-collateral on τ² tasks — τ²'s own success beside topoeval's collateral.

Runs in .venv-tau2 (τ² installed). The customer, where a domain has one, is the local stand-in of the tests
(tests/suites/tau2_user_server.py: it says yes, works the phone when asked, stops at goodbye); telecom's solo
mode needs none. Nothing leaves the machine.

    .venv-tau2/bin/python bench/tau2_collateral.py telecom-solo --n 40
    .venv-tau2/bin/python bench/tau2_collateral.py telecom airline retail --n 20

Prints, per mode and policy: episodes, how many τ² scored 1.0, how many topoeval flagged collateral (and
irreversible), and the damaged entities seen.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests" / "suites")]

from topoeval.core.policy import SamplingParams  # noqa: E402
from topoeval.core.users import UserSettings, use_user  # noqa: E402
from topoeval.models.options import ModelOptions  # noqa: E402
from topoeval.policies.registry import REFERENCE  # noqa: E402
from topoeval.protocol.discovery import SuiteRegistry  # noqa: E402
from topoeval.protocol.schema import Limits  # noqa: E402
from topoeval.runner.episode import run_episode  # noqa: E402

MODES = {"airline": ("airline", False), "retail": ("retail", False), "telecom": ("telecom", False),
         "telecom-solo": ("telecom", True)}


def episodes(mode: str, policies: list[str], n: int, api_base: str | None) -> dict[str, list[dict[str, Any]]]:
    """The records of ``policies`` on the first ``n`` tasks of τ²'s test split of ``mode``."""
    domain, solo = MODES[mode]
    suite = SuiteRegistry().get("tau2")
    params = suite.parse_params({"domain": domain, "solo": solo})
    tasks = suite.tasks(params, "test", 0, min(n, suite.pool_size(params, "test")))
    user = UserSettings(model=None if solo else "direct:customer")
    out: dict[str, list[dict[str, Any]]] = {p: [] for p in policies}
    with use_user(user, ModelOptions(api_bases=[api_base] if api_base else [])):
        for task in tasks:
            for name in policies:
                out[name].append(asyncio.run(run_episode(
                    policy=REFERENCE[name](), suite=suite, task=task, system_prompt=suite.system_prompt(params),
                    demos=[], limits=Limits(max_turns=60, max_tool_calls=60), sampling=SamplingParams(), sample=0,
                    shots=0, labels={})))
    return out


def summary(records: list[dict[str, Any]]) -> str:
    s = [r["scores"] for r in records]
    damaged = Counter(e["entity"] for r in records for e in (r["collateral"] or {}).get("entities", [])
                      if e["kind"] == "collateral")
    kinds = Counter(e["kind"] for r in records for e in (r["collateral"] or {}).get("entities", []))
    irreversible = sum(x["collateral_irreversible"] == 1.0 for x in s)
    return (f"{len(records)} episodes: success 1.0 on {sum(x['success'] == 1.0 for x in s)}, collateral on "
            f"{sum(x['collateral'] == 1.0 for x in s)} (irreversible {irreversible})"
            f"; entity kinds {dict(kinds)}; damaged {dict(damaged)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modes", nargs="+", choices=list(MODES))
    ap.add_argument("--n", type=int, default=20, help="tasks per mode (the first n of τ²'s test split)")
    ap.add_argument("--policies", nargs="+", default=["oracle", "oracle-collateral"])
    args = ap.parse_args()
    server = None
    if any(not MODES[m][1] for m in args.modes):
        from tau2_user_server import Tau2UserServer

        server = Tau2UserServer()
    try:
        for mode in args.modes:
            for name, records in episodes(mode, args.policies, args.n, server and server.api_base).items():
                print(f"{mode:13s} {name:18s} {summary(records)}", flush=True)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
