"""`make leaderboard`: the committed results/ snapshot, regenerated from one command.

Runs the reference policies (each protocol as written) on every shipped protocol; the embedded model
(3 tasks per topology, 0 and 1 shots, 6 turns of 64 tokens) on ``wiki_hops`` and the ladder; the
trained-model collapse — the embedded base and both shipped adapters (``smollm2-135m-wiki``,
``smollm2-135m-travel``), 0/1/2 shots, 12 tasks per topology — on ``wiki_to_travel`` and
``travel_to_wiki``; the wiki-trained adapter on the ladder (8 tasks per step); and the base and the
wiki adapter on the format ladder ``wiki_format_ladder`` (8 tasks per step). No model runs on
the bridged worlds (AgentDojo, BFCL, MCP), whose prompts of 20–70 tools a 135M model cannot use.
Then stages the runs as a publish would (results, latest view and card, without the per-episode
config, to keep the repository small) into ``results/hub/`` and copies the card to
``results/README.md``. Run folders go to ``results/leaderboard/`` (not committed); re-running
resumes them.

The two collapse protocols test the same tasks of the same two topologies with the same prompts, so
the second direction starts from the first's response cache: its episodes are the first's, read back,
not generated twice (temperature 0 would give the same responses anyway).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, NamedTuple

from topoeval.api import run_protocol
from topoeval.policies.registry import EMBEDDED, REFERENCE
from topoeval.publish.hub import stage

#: protocols run with the reference policies and a model
PROTOCOLS = ("wiki_hops", "wiki_to_travel", "wiki_to_travel_ladder", "travel_to_wiki")
#: protocols over bridged worlds, run with the reference policies only. mcp_git and travel_to_mcp_git
#: are left out: a real mcp-server-git process per episode makes their reference run ~25 minutes
#: (docs/suites-mcp.md has their table and the command).
BRIDGED = ("wiki_to_agentdojo", "agentdojo_cross_domain", "bfcl_cross_class", "travel_to_bfcl")
#: the embedded model's quick look (the protocols outside COLLAPSE)
QUICK_LOOK = {"tasks": 3, "shots": [0, 1], "max_turns": 6, "max_tokens": 64}
#: the two directions of the trained-model collapse, in run order (the second reuses the first's cache)
COLLAPSE = ("wiki_to_travel", "travel_to_wiki")
#: the untrained base and the shipped adapters trained on wiki and on travel
COLLAPSE_MODELS = (EMBEDDED, f"{EMBEDDED}-wiki", f"{EMBEDDED}-travel")
#: 12 tasks per topology, the 0/1/2-shot baselines, the quick look's turn and token limits
COLLAPSE_RUN = {"tasks": 12, "shots": [0, 1, 2], "max_turns": 6, "max_tokens": 64}
#: the wiki-trained adapter's ladder curve (0-shot, 8 tasks per step)
LADDER = "wiki_to_travel_ladder"
LADDER_RUN = {"tasks": 8, "shots": [0], "max_turns": 6, "max_tokens": 64}
#: how much of the wiki adapter's collapse is the tool-call format's (issue 28): the same sizes as LADDER_RUN
FORMAT_LADDER = "wiki_format_ladder"
FORMAT_LADDER_MODELS = (EMBEDDED, f"{EMBEDDED}-wiki")
REPO_ID = "topoeval/leaderboard"


class PlannedRun(NamedTuple):
    """One run of the leaderboard: which models on which protocol, into which folder, sized how."""

    protocol: str
    models: tuple[str, ...]
    folder: str
    options: dict[str, Any]
    cache_from: str | None = None
    """a run folder (relative to the leaderboard folder) whose response cache this run starts from"""


def plan() -> list[PlannedRun]:
    """Every run of `make leaderboard`, in order."""
    runs = []
    for protocol in (*PROTOCOLS, *BRIDGED):
        runs.append(PlannedRun(protocol, tuple(sorted(REFERENCE)), "reference", {}))
        if protocol in COLLAPSE:
            first = None if protocol == COLLAPSE[0] else f"{COLLAPSE[0]}/collapse"
            runs.append(PlannedRun(protocol, COLLAPSE_MODELS, "collapse", COLLAPSE_RUN, first))
        elif protocol in PROTOCOLS:
            runs.append(PlannedRun(protocol, (EMBEDDED,), "embedded", QUICK_LOOK))
        if protocol == LADDER:
            runs.append(PlannedRun(protocol, (f"{EMBEDDED}-wiki",), "trained", LADDER_RUN))
    runs.append(PlannedRun(FORMAT_LADDER, tuple(sorted(REFERENCE)), "reference", {}))
    runs.append(PlannedRun(FORMAT_LADDER, FORMAT_LADDER_MODELS, "trained", LADDER_RUN))
    return runs


def seed_cache(source: Path, run_dir: Path) -> bool:
    """Start ``run_dir`` from the response cache of ``source`` unless it has one of its own; True if copied."""
    src, dst = source / "cache.sqlite", run_dir / "cache.sqlite"
    if not src.exists() or dst.exists():
        return False
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return True


def main(out: Path = Path("results")) -> None:
    """Regenerate ``out`` (default ``./results``: ``make leaderboard`` runs from the checkout's root)."""
    runs = []
    board = out / "leaderboard"
    for item in plan():
        run_dir = board / item.protocol / item.folder
        if item.cache_from:
            seed_cache(board / item.cache_from, run_dir)
        runs.append(run_protocol(item.protocol, list(item.models), run_dir, progress=sys.stderr.isatty(),
                                 **item.options).run_dir)
        print(f"{item.protocol} ({item.folder}): done", flush=True)
    hub = out / "hub"
    if hub.exists():
        shutil.rmtree(hub)
    stage(runs, hub, REPO_ID, episodes=False)
    (out / "README.md").write_text(results_readme((hub / "README.md").read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {hub} and {out / 'README.md'}")


def results_readme(card: str) -> str:
    """results/README.md: what the folder holds, then the leaderboard card (front matter dropped,
    headings one level down)."""
    body = card.split("---\n", 2)[2] if card.startswith("---\n") else card
    body = "\n".join("#" + line if line.startswith("#") else line for line in body.strip().splitlines())
    return (
        "# results/\n\n"
        "Run folders land here as `results/<protocol>/<run-id>/` (`run.json`, `episodes.jsonl`, `summary.json`,\n"
        "`report.md`, plots, `report.html`, `cache.sqlite`); they are not committed. `results/hub/` is the\n"
        "committed leaderboard snapshot — the folder `topoeval publish` would upload, without the per-episode\n"
        "config — regenerated by `make leaderboard` (its runs go to `results/leaderboard/`). Its card follows.\n\n"
        + body + "\n"
    )


if __name__ == "__main__":
    main()
