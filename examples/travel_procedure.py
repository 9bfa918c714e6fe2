"""What the models did on travel, episode by episode: the counts the README's collapse prose quotes.

    .venv/bin/python examples/travel_procedure.py results/leaderboard/wiki_to_travel/collapse

For every (model, baseline) cell of a run folder's travel episodes: how many episodes there are, how
many open by asking the traveller (the first call is ``ask_user``, a confirmation included), how
many search for a flight at all, how many go through the whole booking procedure (search, hold, a
confirmation the traveller answered, pay — in that order) and how many of those paid for a flight
the traveller did not want (the episode failed). Reads episodes.jsonl only; no model runs.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

PROCEDURE = ("search_flights", "hold_seat", "confirm", "pay")


def steps(episode: dict) -> list[str]:
    """The episode's tool calls in order, an ``ask_user`` the traveller read as a confirmation as "confirm"."""
    confirmed = {event["call"] for event in episode.get("events") or [] if event.get("type") == "confirm"}
    out = []
    for i, call in enumerate(episode["calls"]):
        out.append("confirm" if i in confirmed else call["name"])
    return out


def follows(sequence: list[str], wanted: tuple[str, ...]) -> bool:
    """Whether ``wanted`` occurs in ``sequence`` in order (not necessarily next to each other)."""
    items = iter(sequence)
    return all(step in items for step in wanted)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    args = ap.parse_args()
    cells: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for line in (args.run_dir / "episodes.jsonl").read_text(encoding="utf-8").splitlines():
        episode = json.loads(line)
        if episode["topology"] == "travel" and not episode.get("errors"):
            cells[(episode["model"], episode["baseline"])].append(episode)
    print("| model | baseline | episodes | open by asking | search | search, hold, confirm, pay | of those failed |")
    print("|---|---|---|---|---|---|---|")
    for (model, baseline), episodes in sorted(cells.items()):
        seqs = [steps(e) for e in episodes]
        opens = sum(bool(e["calls"]) and e["calls"][0]["name"] == "ask_user" for e in episodes)
        search = sum("search_flights" in s for s in seqs)
        booked = [e for e, s in zip(episodes, seqs, strict=True) if follows(s, PROCEDURE)]
        failed = sum(e["scores"]["success"] == 0 for e in booked)
        print(f"| {model} | {baseline} | {len(episodes)} | {opens} | {search} | {len(booked)} | {failed} |")


if __name__ == "__main__":
    main()
