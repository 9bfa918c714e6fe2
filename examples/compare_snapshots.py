"""How two leaderboard snapshots differ: the local models' success and dq numbers, per protocol.

    git show 16a8fd9:results/hub/data/latest.parquet > /tmp/before.parquet
    .venv/bin/python examples/compare_snapshots.py /tmp/before.parquet results/hub/data/latest.parquet

For every protocol: how many (model, baseline, topology) success and dq means the two snapshots
share, how many are identical, and how many have overlapping 95 % CIs; then every number that moved,
with both CIs. Only models whose name starts with ``--models`` (default the embedded ``smollm2``
family): the reference policies are deterministic and have their own check (reproduce_wiki_to_travel.py).
Exits 1 when some CIs are disjoint.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

KEYS = ["protocol", "model", "baseline", "topology", "metric"]


def compare(before: pd.DataFrame, after: pd.DataFrame, models: str) -> pd.DataFrame:
    """The shared success and dq rows of both, with ``same`` and ``overlap`` columns."""
    both = before.merge(after, on=KEYS, suffixes=("_before", "_after"))
    both = both[both.metric.isin(["success", "dq"]) & both.model.str.startswith(models)].copy()
    both["same"] = (both.mean_before - both.mean_after).abs() < 1e-9
    both["overlap"] = ((both.ci_low_before <= both.ci_high_after + 1e-9)
                       & (both.ci_low_after <= both.ci_high_before + 1e-9))
    return both


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--models", default="smollm2", help="compare the models whose name starts with this")
    args = ap.parse_args()
    both = compare(pd.read_parquet(args.before), pd.read_parquet(args.after), args.models)
    for protocol, rows in both.groupby("protocol"):
        print(f"{protocol}: {len(rows)} numbers, {int(rows.same.sum())} identical, "
              f"{int(rows.overlap.sum())} with overlapping CIs, {int((~rows.overlap).sum())} disjoint")
    moved = both[~both.same]
    if len(moved):
        print()
        for r in moved.itertuples():
            flag = "" if r.overlap else "   DISJOINT"
            print(f"{r.protocol} {r.model} {r.baseline} {r.topology} {r.metric}: "
                  f"{r.mean_before:.3f} [{r.ci_low_before:.3f}, {r.ci_high_before:.3f}] -> "
                  f"{r.mean_after:.3f} [{r.ci_low_after:.3f}, {r.ci_high_after:.3f}]{flag}")
    sys.exit(0 if both.overlap.all() else 1)


if __name__ == "__main__":
    main()
