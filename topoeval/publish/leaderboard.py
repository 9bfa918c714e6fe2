"""`make leaderboard`: the committed results/ snapshot, regenerated from one command.

Runs the reference policies (each protocol as written) on every shipped protocol; the embedded model
(3 tasks per topology, 0 and 1 shots, 6 turns of 64 tokens) on ``wiki_hops`` and the ladder; the
trained-model collapse — the embedded base, both shipped SFT adapters (``smollm2-135m-wiki``,
``smollm2-135m-travel``) and the GRPO adapter trained on from the wiki one (``smollm2-135m-wiki-grpo``),
0/1/2 shots, 12 tasks per topology — on ``wiki_to_travel`` and ``travel_to_wiki``; the wiki-trained
adapters (SFT and SFT+GRPO) on the ladder (8 tasks per step); and the base and the wiki adapter on
the format ladder ``wiki_format_ladder`` (8 tasks per step). The transfer matrix (``transfer_matrix``,
:func:`matrix_runs`): the reference policies (:data:`MATRIX_REFERENCE_RUN`), then the base and every
shipped adapter (:func:`matrix_models`) on every topology at 24 tasks, 0-shot, greedy, and on wiki and
travel k = 4 samples at temperature 0.7 (pass@k, pass^k, zero-signal share). Then the transfer-over-training sweeps
(:data:`SWEEPS`: the GRPO run's checkpoints and the wiki SFT run's) where their checkpoints are on
this machine — they are training output, not committed; a sweep whose checkpoints are absent is
skipped with one line and its committed results are kept. Outside the transfer
matrix no model runs on the bridged worlds (AgentDojo, BFCL, MCP), whose prompts of 20–70 tools a
135M model cannot use; the matrix runs them to show exactly that, as cells of its table.
Then stages the runs as a publish would (results, latest view and card, without the per-episode
config, to keep the repository small) into ``results/hub/``, the models' matrix picture into
``results/hub/matrix/``, the sweeps' summaries, tables and plots
into ``results/hub/sweeps/``, and copies the card (with the sweeps' tables) to ``results/README.md``.
Run folders go to ``results/leaderboard/`` (not committed); re-running resumes them.
``python -m topoeval.publish.leaderboard --sweeps-only`` runs the sweeps alone and rewrites the card's
section on them, every other committed number kept (after a retraining, without the model runs' 3 hours).
``--only PART`` (:data:`PARTS`, repeatable) reruns only what a change moves: the part's rows replace the
committed ones of the same protocol and model, every other committed row is kept.

The designed matrix ``axis_matrix`` (loss per axis): the reference policies on its 21 topologies, and the
wiki-trained adapters on the 7 generated around wiki (:data:`AXIS_RUN`). τ² (``wiki_to_tau2_solo``): the reference
policies on wiki and τ² telecom's solo mode (:data:`TAU2_RUN`), then the base and the shipped adapters
(:data:`TAU2_MODEL_RUN`); its extra has a virtualenv of its own, so
``make leaderboard-tau2`` runs that part there, and the main leaderboard skips it in one line, its rows kept.

The two collapse protocols test the same tasks of the same two topologies with the same prompts, so
the second direction takes the first's response cache: its episodes are the first's, read back,
not generated twice (temperature 0 would give the same responses anyway); a sweep's step 0 (the
base, or the SFT adapter a GRPO run started from) is read back from the collapse the same way.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from topoeval.api import run_protocol
from topoeval.core.files import write_atomic
from topoeval.policies.registry import EMBEDDED, REFERENCE
from topoeval.publish.hub import MATRIX_FILE, RESULTS_FILE, stage

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
#: the untrained base, the shipped SFT adapters trained on wiki and on travel, and GRPO on wiki from the SFT one
COLLAPSE_MODELS = (EMBEDDED, f"{EMBEDDED}-wiki", f"{EMBEDDED}-travel", f"{EMBEDDED}-wiki-grpo")
#: 12 tasks per topology, the 0/1/2-shot baselines, the quick look's turn and token limits
COLLAPSE_RUN = {"tasks": 12, "shots": [0, 1, 2], "max_turns": 6, "max_tokens": 64}
#: the wiki-trained adapters' ladder curves, SFT and SFT+GRPO (0-shot, 8 tasks per step)
LADDER = "wiki_to_travel_ladder"
LADDER_MODELS = (f"{EMBEDDED}-wiki", f"{EMBEDDED}-wiki-grpo")
LADDER_RUN = {"tasks": 8, "shots": [0], "max_turns": 6, "max_tokens": 64}
#: how much of the wiki adapter's collapse is the tool-call format's (issue 28): the same sizes as LADDER_RUN
FORMAT_LADDER = "wiki_format_ladder"
FORMAT_LADDER_MODELS = (EMBEDDED, f"{EMBEDDED}-wiki")
#: the transfer matrix (issue 46): every model on wiki, wiki-hermes, travel, BFCL, AgentDojo and git
MATRIX = "transfer_matrix"
#: the base and the adapters the matrix runs, where their files are here (the travel GRPO adapter may not be)
MATRIX_MODELS = (EMBEDDED, f"{EMBEDDED}-wiki", f"{EMBEDDED}-wiki-grpo", f"{EMBEDDED}-travel",
                 f"{EMBEDDED}-travel-grpo")
#: the reference policies' matrix: a real mcp-server-git process per git episode, so few tasks
MATRIX_REFERENCE_RUN: dict[str, Any] = {"tasks": 6}
#: 24 tasks per topology, 0-shot, greedy, the collapse's turn and token limits (the wiki and travel cells'
#: first 12 tasks are the collapse's: same seed, so their responses are read back from its cache)
MATRIX_RUN: dict[str, Any] = {"tasks": 24, "shots": [0], "temperature": 0.0, "max_turns": 6, "max_tokens": 64}
#: on wiki and travel, k = 4 samples at temperature 0.7: could RL on the other topology start from this model?
MATRIX_SAMPLED_RUN: dict[str, Any] = {**MATRIX_RUN, "topologies": ["wiki", "travel"], "samples": 4,
                                      "temperature": 0.7}
#: the designed matrix (issue 58): loss per axis. Its reference policies on every generated topology at the
#: protocol's size, then the wiki-trained adapters (SFT and SFT+GRPO) on the topologies generated around wiki,
#: 12 tasks, 0-shot, greedy, the collapse's turn and token limits (the base is left out: it solves no wiki task,
#: so every effect of its would be undefined — a ratio of noise)
AXIS_MATRIX = "axis_matrix"
AXIS_MODELS = (f"{EMBEDDED}-wiki", f"{EMBEDDED}-wiki-grpo")
AXIS_WIKI_TOPOLOGIES = ["wiki", "wiki+renamed", "wiki+distractors", "wiki+hermes", "wiki+serial", "wiki+batched",
                        "wiki+renamed+hermes"]
AXIS_RUN: dict[str, Any] = {"tasks": 12, "shots": [0], "temperature": 0.0, "max_turns": 6, "max_tokens": 64,
                            "topologies": AXIS_WIKI_TOPOLOGIES}
#: τ²-bench (issue 57): the reference policies on wiki_to_tau2_solo (wiki, and τ² telecom in solo mode: no model
#: plays the customer), 20 tasks each. Its extra lives in a virtualenv of its own, so this part runs there
#: (`make leaderboard-tau2`); elsewhere it is skipped in one line and its committed rows are kept.
TAU2 = "wiki_to_tau2_solo"
TAU2_RUN: dict[str, Any] = {"tasks": 20}
#: then the base and the shipped adapters (the collapse's models) on its first 10 tasks, 0-shot, greedy, the
#: collapse's 6 turns of 64 tokens (τ²'s policy and tools make a prompt of ~5,000 tokens: a 135M model's turn is slow)
TAU2_MODEL_RUN: dict[str, Any] = {"tasks": 10, "shots": [0], "temperature": 0.0, "max_turns": 6, "max_tokens": 64}
REPO_ID = "topoeval/leaderboard"


class PlannedSweep(NamedTuple):
    """One transfer-over-training sweep: a training record whose kept checkpoints are evaluated."""

    record: str
    """the training record, relative to the checkout's root"""
    every: int | None
    """evaluate only checkpoints at multiples of this step (and the last); None: all kept"""
    command: str
    """the training command that leaves the checkpoints (in runs/train/<name>/checkpoints)"""


#: the GRPO run's checkpoints (every 8 steps: a rerun of the shipped recipe into runs/adapters, as `make train
#: METHOD=grpo` would overwrite the shipped adapter) and the wiki SFT run's (every 50 of its 200 steps)
SWEEPS = (
    PlannedSweep("runs/adapters/smollm2-135m-wiki-grpo.json", None,
                 "topoeval train wiki_to_travel --method grpo --max-steps 40 --save-steps 8 --fresh"),
    PlannedSweep("runs/adapters/smollm2-135m-wiki.json", 50,
                 "topoeval train wiki_to_travel --tasks 200 --epochs 1 --keep-checkpoints"),
)
#: the sweeps' cells: the collapse's sizes at its 0-shot baseline (so step 0 is read back from its cache)
SWEEP_RUN = {"tasks": 12, "max_turns": 6, "max_tokens": 64}
SWEEP_PROTOCOL = COLLAPSE[0]


class PlannedRun(NamedTuple):
    """One run of the leaderboard: which models on which protocol, into which folder, sized how."""

    protocol: str
    models: tuple[str, ...]
    folder: str
    options: dict[str, Any]
    cache_from: str | None = None
    """a run folder (relative to the leaderboard folder) whose response cache this run starts from"""

    @property
    def part(self) -> str:
        """The part of the leaderboard it belongs to (``--only`` names parts): :data:`PARTS`."""
        if self.protocol == AXIS_MATRIX:
            return "axis_matrix"
        if self.protocol == TAU2:
            return "tau2"
        if self.folder == "reference":
            return "reference"
        return {"trained": "ladders", "matrix-sampled": "matrix"}.get(self.folder, self.folder)


#: the parts of the leaderboard, each rerun alone by ``--only PART`` (what a change moves)
PARTS = ("reference", "collapse", "embedded", "ladders", "matrix", "axis_matrix", "tau2")


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
            runs.append(PlannedRun(protocol, LADDER_MODELS, "trained", LADDER_RUN))
    runs.append(PlannedRun(FORMAT_LADDER, tuple(sorted(REFERENCE)), "reference", {}))
    runs.append(PlannedRun(FORMAT_LADDER, FORMAT_LADDER_MODELS, "trained", LADDER_RUN))
    return runs + matrix_runs() + [
        PlannedRun(AXIS_MATRIX, tuple(sorted(REFERENCE)), "reference", {}),
        PlannedRun(AXIS_MATRIX, AXIS_MODELS, "wiki-adapters", AXIS_RUN),
        PlannedRun(TAU2, tuple(sorted(REFERENCE)), "reference", TAU2_RUN),
        PlannedRun(TAU2, COLLAPSE_MODELS, "models", TAU2_MODEL_RUN),
    ]


def matrix_models() -> tuple[str, ...]:
    """:data:`MATRIX_MODELS` whose adapter file is here (the base always); each left out is said in one line."""
    from topoeval.models.adapters import adapter_files, adapter_topology

    kept = []
    for model in MATRIX_MODELS:
        if adapter_topology(model) is not None and not adapter_files(model)[0].is_file():
            print(f"{MATRIX}: {model} left out, its adapter is not here", flush=True)
            continue
        kept.append(model)
    return tuple(kept)


def matrix_runs() -> list[PlannedRun]:
    """The transfer matrix's runs: the reference policies, then the models greedy on every topology (its wiki and
    travel cells seeded from the collapse's cache), then k = 4 samples at temperature 0.7 on wiki and travel."""
    models = matrix_models()
    collapse = f"{COLLAPSE[0]}/collapse"
    return [PlannedRun(MATRIX, tuple(sorted(REFERENCE)), "reference", MATRIX_REFERENCE_RUN),
            PlannedRun(MATRIX, models, "matrix", MATRIX_RUN, collapse),
            PlannedRun(MATRIX, models, "matrix-sampled", MATRIX_SAMPLED_RUN)]


def seed_cache(source: Path, run_dir: Path) -> int:
    """Add to ``run_dir``'s response cache the responses of ``source``'s that it lacks (its own are never
    replaced); how many were added. The keys hold the model, its weights and every setting, so a
    response is only ever read back for the very request that made it."""
    from topoeval.models.cache import ResponseCache

    src = source / "cache.sqlite"
    if not src.exists():
        return 0
    cache = ResponseCache(run_dir / "cache.sqlite")
    try:
        return cache.merge_from(src)
    finally:
        cache.close()


def main(out: Path = Path("results"), sweeps_only: bool = False, only: tuple[str, ...] = (),
         card_only: bool = False) -> None:
    """Regenerate ``out`` (default ``./results``: ``make leaderboard`` runs from the checkout's root);
    ``sweeps_only``: the sweeps and the card's section on them, nothing else; ``only``: these
    :data:`PARTS` alone, their rows replacing the committed ones and every other committed row kept;
    ``card_only``: the card alone, rendered again from the committed rows (what a change to the card moves).
    A part whose extra is missing here (τ²) is skipped in one line and its committed rows are kept."""
    board = out / "leaderboard"
    hub = out / "hub"
    if card_only:
        write_card(out, render_committed_card(hub))
        return
    if sweeps_only:
        run_sweeps(board, hub / "sweeps")
        write_card(out, without_sweeps((hub / "README.md").read_text(encoding="utf-8")))
        return
    unknown = sorted(set(only) - set(PARTS))
    if unknown:
        raise SystemExit(f"unknown leaderboard part(s) {', '.join(unknown)}; the parts: {', '.join(PARTS)}")
    planned = [item for item in plan() if not only or item.part in only]
    runs, ran, skipped = [], [], set()
    for item in planned:
        reason = missing_extra(item)
        if reason:
            print(f"{item.protocol} ({item.folder}): skipped, its committed rows kept ({reason})", flush=True)
            skipped.add(item.protocol)
            continue
        run_dir = board / item.protocol / item.folder
        if item.cache_from:
            seed_cache(board / item.cache_from, run_dir)
        start = time.monotonic()
        runs.append(run_protocol(item.protocol, list(item.models), run_dir, progress=sys.stderr.isatty(),
                                 **item.options).run_dir)
        ran.append(item)
        minutes, seconds = divmod(round(time.monotonic() - start), 60)
        print(f"{item.protocol} ({item.folder}): done in {minutes} min {seconds} s", flush=True)
    if not runs:
        print("nothing ran: the committed results are unchanged", flush=True)
        return
    # what is kept of the committed rows: all of them (--only), or those of the parts skipped here
    keep = (lambda row: True) if only else (lambda row: row["protocol"] in skipped)
    existing = kept_rows(hub / RESULTS_FILE, runs, keep)
    existing_matrix = kept_rows(hub / MATRIX_FILE, runs, keep)
    if hub.exists():  # all but the sweeps (run_sweeps refreshes them only where it can) and, --only, the picture
        for child in hub.iterdir():
            if child.name != "sweeps" and not (only and child.name == MATRIX_PICTURE.parts[0]):
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    stage(runs, hub, REPO_ID, existing=existing, episodes=False, existing_matrix=existing_matrix)
    if any(item.part == "matrix" for item in ran):
        stage_matrix_picture(board, hub)
    if not only:
        run_sweeps(board, hub / "sweeps")
    write_card(out, without_sweeps((hub / "README.md").read_text(encoding="utf-8")))


def render_committed_card(hub: Path) -> str:
    """The card (less its sweeps' section) rendered from the committed result and matrix rows, as
    :func:`~topoeval.publish.hub.stage` renders it after a run: nothing runs, no number changes."""
    from topoeval.core.errors import UserError
    from topoeval.core.parquet import read_rows
    from topoeval.publish.card import render_card

    if not (hub / RESULTS_FILE).is_file():
        raise UserError(f"{hub / RESULTS_FILE}: no committed results to render the card from; run the leaderboard")
    matrix = read_rows(hub / MATRIX_FILE) if (hub / MATRIX_FILE).is_file() else []
    return render_card(read_rows(hub / RESULTS_FILE), REPO_ID, episodes=False, matrix=matrix)


def missing_extra(item: PlannedRun) -> str | None:
    """Why ``item`` cannot run in this environment (an extra it needs is not installed), or None."""
    if item.protocol == TAU2:
        import importlib.util

        if importlib.util.find_spec("tau2") is None:
            return "the tau2 extra is not installed here; `make leaderboard-tau2` runs it in .venv-tau2"
    return None


def kept_rows(path: Path, runs: list[Path], keep: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """The committed rows of ``path`` that ``keep`` keeps, less every row of a (protocol, model) that ``runs``
    publish again: a rerun replaces its rows whatever task set they were of, so no stale row outlives it."""
    from topoeval.core.parquet import read_rows
    from topoeval.publish.tables import load_run

    if not path.is_file():
        return []
    rerun = set()
    for run_dir in runs:
        meta = load_run(run_dir)[0]
        rerun |= {(meta["protocol"]["name"], model) for model in meta.get("models", [])}
    return [row for row in read_rows(path) if keep(row) and (row["protocol"], row["model"]) not in rerun]


#: where the models' transfer matrix picture is committed (the README leads with it)
MATRIX_PICTURE = Path("matrix") / f"{MATRIX}.png"


def stage_matrix_picture(board: Path, hub: Path) -> None:
    """The models' greedy transfer matrix (its run's ``matrix.png``) copied to ``hub / MATRIX_PICTURE``."""
    target = hub / MATRIX_PICTURE
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(board / MATRIX / "matrix" / "matrix.png", target)


def write_card(out: Path, staged: str) -> None:
    """The hub card (the staged card and the published sweeps' section) and ``results/README.md``."""
    hub = out / "hub"
    card = staged + sweeps_section(hub / "sweeps")
    write_atomic(hub / "README.md", card)
    write_atomic(out / "README.md", results_readme(card))
    print(f"wrote {hub} and {out / 'README.md'}")


def without_sweeps(card: str) -> str:
    """The card as staged, before :func:`sweeps_section` was appended to it."""
    return card.split(SWEEPS_HEADING, 1)[0]


def run_sweeps(board: Path, published: Path) -> None:
    """Each of :data:`SWEEPS` whose record and checkpoints are here: evaluated into ``board``, its
    summary, tables and plot copied to ``published/sweep-<model>/``; the others skipped in one line."""
    from topoeval.api import run_sweep
    from topoeval.core.errors import UserError
    from topoeval.core.safe_paths import safe_component
    from topoeval.training.checkpoints import checkpoint_points, read_record, sweep_training

    for planned in SWEEPS:
        try:
            record = read_record(Path(planned.record))[0]
            folder = board / SWEEP_PROTOCOL / safe_component(f"sweep-{record['model']}")  # a name, never a path
            points = checkpoint_points(record, folder / "adapters", every=planned.every)
        except (UserError, OSError) as exc:
            print(f"sweep of {planned.record}: skipped, its committed results kept ({exc}; `{planned.command}` "
                  "leaves the checkpoints)", flush=True)
            continue
        seed_cache(board / COLLAPSE[0] / "collapse", folder / "run")
        run_sweep(SWEEP_PROTOCOL, points, folder, training=sweep_training(record, planned.record, planned.every),
                  adapters=folder / "adapters", progress=False, **SWEEP_RUN)
        target = published / folder.name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in ("summary.json", "report.md", "report.html", "sweep.png"):
            shutil.copyfile(folder / name, target / name)
        print(f"sweep of {record['model']}: done", flush=True)


SWEEPS_HEADING = "\n## Transfer over training\n"


def sweeps_section(published: Path) -> str:
    """The card's section on transfer over training: each published sweep's table (its report.md)."""
    reports = sorted(published.glob("sweep-*/report.md"))
    if not reports:
        return ""
    parts = ["", SWEEPS_HEADING.strip(), ""]
    for report in reports:
        body = report.read_text(encoding="utf-8").split("\n", 1)[1].strip()  # its own title dropped
        body = body.replace("](sweep.png)", f"](sweeps/{report.parent.name}/sweep.png)")
        parts += [f"### {report.parent.name.removeprefix('sweep-')}", "", body, ""]
    return "\n".join(parts)


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


def cli(argv: list[str] | None = None) -> None:
    """``python -m topoeval.publish.leaderboard [--sweeps-only] [--out DIR]``: an unknown argument (or
    ``--help``) stops before anything runs, never starts the hour of model runs by mistake."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m topoeval.publish.leaderboard",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sweeps-only", action="store_true",
                        help="run the transfer-over-training sweeps alone and rewrite the card's section on them")
    parser.add_argument("--only", action="append", choices=PARTS, default=[], metavar="PART",
                        help=f"run only this part (repeatable: {', '.join(PARTS)}); its rows replace the committed "
                        "ones, every other committed row is kept")
    parser.add_argument("--card-only", action="store_true",
                        help="render the card again from the committed rows (nothing runs, no number changes)")
    parser.add_argument("--out", type=Path, default=Path("results"), help="the results folder (default: results)")
    args = parser.parse_args(argv)
    if args.card_only:
        main(out=args.out, card_only=True)
    elif args.only:
        main(out=args.out, sweeps_only=args.sweeps_only, only=tuple(args.only))
    else:
        main(out=args.out, sweeps_only=args.sweeps_only)


if __name__ == "__main__":
    cli()
