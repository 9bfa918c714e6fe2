"""The planted-axis recovery table: the designed matrix's attribution on policies whose weakness is known.

Runs ``protocols/axis_matrix.yaml`` (or ``--protocol``) with every planted reference policy (the oracle that
gives up on a seeded share of the tasks wherever one axis moved: :class:`topoeval.policies.reference.PlantedPolicy`)
and prints, per policy and design, each move's fitted success loss with its paired bootstrap 95 % CI, the
planted loss it should recover, and whether the CI covers it. Reference policies need no model: about a
minute on 2 cores at 40 tasks.

    .venv/bin/python bench/planted_recovery.py [--tasks 40] [--out /tmp/planted]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import topoeval
from topoeval.policies.reference import PLANTED, PLANTED_SIZE

#: which moves of axis_matrix.yaml each planted weakness reacts to (what the attribution must find)
FIRES_ON = {"format": {"hermes"}, "schema": {"renamed", "distractors"}, "user": {"no-user"}, "merged": {"merged"},
            "ordering": {"flat"}, "dependency": {"serial", "batched"}, "instructions": {"split"}}
#: the policies of the table: every planted weakness alone, and two combinations
POLICIES = [*(f"planted-{w}" for w in PLANTED), "planted-format+merged", "planted-schema+user"]


def planted_loss(policy: str, moves: list[str]) -> float:
    """The loss a policy's weaknesses plant on a term (a move, or a pair of moves run together): PLANTED_SIZE on
    a move one weakness fires on; on a pair whose two moves fire two different weaknesses, the interaction of
    two independent draws (−PLANTED_SIZE², they fail together on that share); 0 anywhere else."""
    weaknesses = policy.removeprefix("planted-").split("+")
    fired = [w for w in weaknesses if any(m in FIRES_ON[w] for m in moves)]
    if len(moves) == 1:
        return PLANTED_SIZE if fired else 0.0
    per_move = [{w for w in weaknesses if m in FIRES_ON[w]} for m in moves]
    if all(per_move) and not set.intersection(*per_move):
        return -PLANTED_SIZE ** 2
    return 0.0


def recovery(tasks: int = 40, out: Path | None = None, protocol: str = "axis_matrix") -> list[dict[str, Any]]:
    """One entry per policy × design × term: the fitted loss, its CI, the planted loss and whether it is covered."""
    folder = out or Path(tempfile.mkdtemp(prefix="planted-"))
    run = topoeval.run_protocol(protocol, POLICIES, folder / "run", tasks=tasks, progress=False)
    rows = []
    for design in run.summary["matrix"]["axis_effects"]["designs"]:
        for row in design["rows"]:
            fit = row["metrics"]["success"]
            for label, e in fit["effects"].items():
                moves = [m for term in e["terms"] for m in term.split(" × ")]
                planted = planted_loss(row["model"], moves)
                ci = e["ci95"]
                rows.append({"policy": row["model"], "base": design["base"], "term": label, "axis": "+".join(e["axes"]),
                             "planted": planted, "loss": e["loss"], "ci95": ci,
                             "covered": ci is not None and ci[0] <= planted <= ci[1]})
    return rows


def table(rows: list[dict[str, Any]], only_planted: bool = False) -> str:
    lines = ["| policy | base | move | axis | planted | fitted loss [95 % CI] | covered |", "|---" * 7 + "|"]
    for r in rows:
        if only_planted and not r["planted"]:
            continue
        ci = r["ci95"]
        lines.append(f"| {r['policy']} | {r['base']} | {r['term']} | {r['axis']} | {r['planted']:.2f} | "
                     f"{r['loss']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}] | {'yes' if r['covered'] else 'NO'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--all", action="store_true", help="every term, not only those with a planted loss")
    args = parser.parse_args()
    rows = recovery(args.tasks, args.out)
    print(table(rows, only_planted=not args.all))
    zero = [r for r in rows if not r["planted"]]
    print(f"\n{sum(r['covered'] for r in rows)} of {len(rows)} CIs cover the planted loss; of the {len(zero)} terms "
          f"with nothing planted, the largest |loss| is {max(abs(r['loss']) for r in zero):.2f}")


if __name__ == "__main__":
    main()
