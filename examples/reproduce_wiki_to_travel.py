"""Reproduce the published wiki_to_travel numbers — the kind of script a paper ships.

    python examples/reproduce_wiki_to_travel.py                  # reference policies (~30 s)
    python examples/reproduce_wiki_to_travel.py --with-models    # + the trained-model collapse (base, SFT wiki and travel, GRPO wiki)
    python examples/reproduce_wiki_to_travel.py --published ORG/NAME   # numbers from a Hub leaderboard

It (1) pins the protocol by its sha256, so an edited protocol cannot pass for the published one;
(2) runs each model exactly as its published row was produced; (3) judges every reproduced
success and dq mean: reproduced when the reproduced 95 % CI overlaps the published one (so a
degenerate interval — every episode 0, say — cannot fail by construction), and, for the local
models, says when the decoding fingerprint differs (llama.cpp build, CPU features, batching: greedy
decoding is bit-identical only when all three match); (4) prints the table. Exit code 1 when a
number's interval does not overlap the published one. The published numbers default to the committed snapshot
``results/hub/data/results.parquet`` written by ``make leaderboard``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import topoeval
from topoeval.protocol.loader import load_protocol, protocol_hash
from topoeval.publish.leaderboard import COLLAPSE_MODELS, COLLAPSE_RUN

PROTOCOL = "wiki_to_travel"
#: sha256 of protocols/wiki_to_travel.yaml as published (formatting and comments do not count).
PROTOCOL_SHA256 = "a848abf7466c23d9f342948fef4fa57cbec69e11e9ec1bdebae2f39694937e7f"
REFERENCE = ["oracle", "oracle-no-ask", "oracle-reckless", "oracle-no-priority", "oracle-serial",
             "oracle-redundant", "noop"]
#: the embedded base and the shipped adapters (SFT on wiki and on travel, GRPO on wiki), and how their
#: rows were produced: both come from `make leaderboard`'s own plan, so the two cannot drift apart
MODELS = list(COLLAPSE_MODELS)
COLLAPSE = dict(COLLAPSE_RUN)
METRICS = ("success", "dq")
SNAPSHOT = Path(__file__).resolve().parents[1] / "results" / "hub" / "data" / "results.parquet"


def published_rows(source: str | None, snapshot: Path) -> list[dict]:
    import datasets

    if source:  # a Hub leaderboard repo
        return datasets.load_dataset(source, "results", split="train").to_list()
    return datasets.load_dataset("parquet", data_files=str(snapshot), split="train").to_list()


def fingerprint_change(published: str, reproduced: dict | None) -> str:
    """Which part of a local model's decoding fingerprint differs from the published run's: "" when
    none does (or neither run used a local model)."""
    before = json.loads(published) if published else None
    if not before and not reproduced:
        return ""
    if not before or not reproduced:
        return "fingerprint (not recorded)"
    def part(fp: dict, key: str):
        return (fp.get("cpu") or {}).get("features") if key == "cpu" else fp.get(key)

    parts = [name for key, name in (("build", "llama.cpp build"), ("cpu", "CPU features"), ("batching", "batching"),
                                    ("n_threads", "threads")) if part(before, key) != part(reproduced, key)]
    return ", ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--with-models", "--with-embedded", action="store_true",
                        help="also reproduce the rows of the embedded base and its shipped adapters (the collapse run)")
    parser.add_argument("--published", help="Hub dataset repo to read the published numbers from")
    parser.add_argument("--snapshot", type=Path, default=SNAPSHOT, help="results parquet to read (default: the committed one)")
    parser.add_argument("--out", help="run folder root (default: a temporary folder)")
    args = parser.parse_args()

    protocol = load_protocol(PROTOCOL)
    if protocol_hash(protocol) != PROTOCOL_SHA256:
        print(f"protocol {PROTOCOL} changed since publication: sha256 {protocol_hash(protocol)}", file=sys.stderr)
        return 1
    published = {(r["model"], r["baseline"], r["topology"], r["metric"]): r
                 for r in published_rows(args.published, args.snapshot) if r["protocol"] == PROTOCOL}
    out = Path(args.out or tempfile.mkdtemp(prefix="reproduce-"))
    runs = [(REFERENCE, {})] + ([(MODELS, COLLAPSE)] if args.with_models else [])
    failures, lines = 0, []
    for models, overrides in runs:
        result = topoeval.run_protocol(protocol, models, out / models[0], **overrides)
        meta = json.loads((result.run_dir / "run.json").read_text())
        for cell in result.summary["cells"]:
            for metric in METRICS:
                stats = cell["metrics"].get(metric) or {}
                mine, (mlo, mhi) = stats.get("mean"), stats.get("ci95") or (None, None)
                row = published.get((cell["model"], cell["baseline"], cell["topology"], metric))
                if row is None or mine is None or row["mean"] is None:
                    continue
                lo, hi = row["ci_low"], row["ci_high"]
                if row["task_set_sha256"] != result.summary["task_set_sha256"]:
                    ok, verdict = False, "task set differs"
                else:
                    mlo, mhi = (mine, mine) if mlo is None else (mlo, mhi)
                    ok = mlo <= hi + 1e-9 and lo <= mhi + 1e-9  # the two 95 % CIs overlap
                    same = abs(mine - row["mean"]) <= 1e-9
                    verdict = "identical" if same else "ok (CIs overlap)" if ok else "OUT OF CI (the 95 % CIs are disjoint)"
                    changed = fingerprint_change(row.get("inference") or "", meta.get("inference", {}).get(cell["model"]))
                    if changed and not same:
                        verdict += f"; other {changed}"
                failures += not ok
                lines.append(f"{cell['model']:<19} {cell['baseline']:<7} {cell['topology']:<7} {metric:<8} "
                             f"{row['mean']:>9.3f} [{lo:.3f}, {hi:.3f}] {mine:>10.3f} [{mlo:.3f}, {mhi:.3f}]  {verdict}")
    print(f"{'model':<19} {'baseline':<7} {'topology':<7} {'metric':<8} {'published':>9} {'95% CI':<14} "
          f"{'reproduced':>10} {'95% CI':<14}")
    print("\n".join(lines))
    print(f"\n{len(lines) - failures}/{len(lines)} numbers reproduced (95 % CIs overlap); "
          f"{sum('identical' in l for l in lines)} identical")
    return 1 if failures or not lines else 0


if __name__ == "__main__":
    sys.exit(main())
