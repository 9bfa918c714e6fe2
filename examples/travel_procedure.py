"""What the models did on travel, episode by episode: the counts the README's collapse prose quotes.

    .venv/bin/python examples/travel_procedure.py results/leaderboard/wiki_to_travel/collapse

For every (model, baseline) cell of a run folder's travel episodes: how many episodes there are, how
many open by asking the traveller (the first call is ``ask_user``, a confirmation included), how
many search for a flight at all, how many go through the whole booking procedure (search, hold, a
confirmation the traveller answered, pay — in that order) and how many of those paid for a flight
the traveller did not want (the episode failed); then how many held a seat at all, how many held the
traveller's flight first (the task is made again from run.json's protocol to know it), and how many
wrote a line of reasoning before their first hold (an adapter trained with ``--rationale``). Reads
the run folder only; no model runs.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

PROCEDURE = ("search_flights", "hold_seat", "confirm", "pay")


def targets(run_dir: Path, task_ids: set[str]) -> dict[str, str]:
    """The flight each travel task's traveller wants, from its task made again under the run's protocol."""
    from topoeval.protocol.schema import Protocol
    from topoeval.protocol.topology import topology_from
    from topoeval.training.sft_data import regenerate_task

    protocol = Protocol.model_validate(json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["protocol"])
    topology = topology_from("travel", protocol)
    return {t: regenerate_task(topology, protocol, t)[0].data["truth"]["target"] for t in sorted(task_ids)}


def first_hold(episode: dict) -> tuple[str | None, bool]:
    """(the flight of the episode's first hold_seat call, whether its turn wrote text before the calls)."""
    for message in episode["messages"]:
        for call in message.get("tool_calls") or [] if message["role"] == "assistant" else []:
            if call["function"]["name"] == "hold_seat":
                args = call["function"]["arguments"]
                try:
                    args = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    args = {}
                flight = args.get("flight_id") if isinstance(args, dict) else None
                return flight, bool(message.get("content"))
    return None, False


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
    wanted = targets(args.run_dir, {e["task_id"] for episodes in cells.values() for e in episodes})
    print("| model | baseline | episodes | open by asking | search | search, hold, confirm, pay | of those failed "
          "| hold | first hold on the wanted flight | a line before it |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (model, baseline), episodes in sorted(cells.items()):
        seqs = [steps(e) for e in episodes]
        opens = sum(bool(e["calls"]) and e["calls"][0]["name"] == "ask_user" for e in episodes)
        search = sum("search_flights" in s for s in seqs)
        booked = [e for e, s in zip(episodes, seqs, strict=True) if follows(s, PROCEDURE)]
        failed = sum(e["scores"]["success"] == 0 for e in booked)
        holds = [first_hold(e) for e in episodes]
        held = sum(f is not None for f, _ in holds)
        on_target = sum(f == wanted[e["task_id"]] for e, (f, _) in zip(episodes, holds, strict=True))
        reasoned = sum(line for _, line in holds)
        print(f"| {model} | {baseline} | {len(episodes)} | {opens} | {search} | {len(booked)} | {failed} "
              f"| {held} | {on_target} | {reasoned} |")


if __name__ == "__main__":
    main()
