"""`make leaderboard`: the committed results/ snapshot, regenerated from one command.

Runs the reference policies (each protocol as written) and the embedded model (the quick look of
`make eval`: 3 tasks per topology, 0 and 1 shots, 6 turns of 64 tokens) on every shipped
protocol, then stages them as a publish would (results, latest view and card, without the
per-episode config, to keep the repository small) into ``results/hub/`` and copies the card to
``results/README.md``. Run folders go to ``results/leaderboard/`` (not committed); re-running
resumes them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from topoeval.discovery import REPO_ROOT
from topoeval.policies.registry import EMBEDDED, REFERENCE
from topoeval.publish.hub import stage
from topoeval.runner.run import run_protocol

PROTOCOLS = ("wiki_hops", "wiki_to_travel", "wiki_to_travel_ladder")
QUICK_LOOK = {"tasks": 3, "shots": [0, 1], "max_turns": 6, "max_tokens": 64}
REPO_ID = "topoeval/leaderboard"


def main(out: Path = REPO_ROOT / "results") -> None:
    runs = []
    for protocol in PROTOCOLS:
        base = out / "leaderboard" / protocol
        runs.append(run_protocol(protocol, sorted(REFERENCE), base / "reference").run_dir)
        runs.append(run_protocol(protocol, [EMBEDDED], base / "embedded", progress=sys.stderr.isatty(), **QUICK_LOOK).run_dir)
        print(f"{protocol}: done", flush=True)
    hub = out / "hub"
    if hub.exists():
        shutil.rmtree(hub)
    stage(runs, hub, REPO_ID, episodes=False)
    shutil.copyfile(hub / "README.md", out / "README.md")
    print(f"wrote {hub} and {out / 'README.md'}")


if __name__ == "__main__":
    main()
