"""How alike the deterministic user and an LLM user read a run's questions (``topoeval user-agreement``).

Every ``ask_user`` question of a run folder's episodes is replayed: each episode's world is rebuilt
from its task twice — once with the suite's deterministic user, once with the user model — and its
calls are re-applied in order, so a question is read in the state it was asked in (the seats held
then); each question is then read by both users (``user.read``, nothing recorded). A reading is a
confirmation of one flight, a set of slots, or nothing (``none``).

Reported per slot (and for ``confirm`` and ``none``): how many questions each user put there, how
many both did, and ``agreement`` — the share of all questions on which the two agree about that
slot (both say it, or both do not). ``exact``: the share of questions read identically. Only suites
whose users can ``read`` (the travel suite) take part; other episodes are skipped and counted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.files import write_json_atomic
from topoeval.core.suite import ToolError, WorldError
from topoeval.core.users import UserSettings, use_user
from topoeval.protocol.discovery import SuiteRegistry
from topoeval.protocol.loader import load_protocol
from topoeval.protocol.topology import resolve

SLOTS = ("budget", "airline", "dates", "priority", "events", "route", "confirm", "none")
INDEX = re.compile(r"/test/(\d+)-")


def label(reading: Any) -> tuple[str, ...]:
    """A reading as the labels it carries: ('confirm', flight) / its slots / ('none',)."""
    if reading.kind == "confirm":
        return ("confirm", str(reading.flight))
    return tuple(sorted(reading.slots)) or ("none",)


def _records(run_dir: Path) -> list[dict[str, Any]]:
    from topoeval.runner.shards import folder_records

    return list(folder_records(run_dir).values())


def replay_questions(run_dir: Path, user_model: str, options: Any = None, protocol: Any = None,
                     suites_dirs: list | tuple = ()) -> dict[str, Any]:
    """Both readings of every question in the run (see the module docstring).

    The worlds are rebuilt from ``protocol`` (a Protocol, or a protocol file or shipped name) with the suites
    of ``suites_dirs``, both the caller's; default: the shipped protocol of the name run.json records. A run
    folder whose run.json records another protocol is refused: neither the protocol file nor the suite folders
    run.json's config names are loaded (a folder may come from anyone)."""
    from topoeval.protocol.discovery import shipped_protocols_dir
    from topoeval.protocol.schema import Protocol
    from topoeval.runner.recorded_protocol import check_run_protocol, recorded_protocol_name

    run_dir = Path(run_dir)
    meta_path = run_dir / "run.json"
    if not meta_path.exists():
        raise UserError(f"{run_dir}: no run.json here (give a run folder of `topoeval run`)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"{meta_path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise UserError(f"{meta_path}: not a run.json (not a JSON object)")
    registry = SuiteRegistry([Path(p) for p in suites_dirs])
    if protocol is None:
        name = recorded_protocol_name(meta)
        shipped = shipped_protocols_dir() / f"{name}.yaml" if name and re.fullmatch(r"[A-Za-z0-9_-]+", name) else None
        if shipped is None or not shipped.is_file():
            raise UserError(f"{run_dir}: its protocol {name!r} is not a shipped one: give the protocol file it was "
                            "run with")
        protocol = shipped
    if not isinstance(protocol, Protocol):
        protocol = load_protocol(protocol, registry)
    protocol = check_run_protocol(run_dir, meta, protocol)
    topologies = {spec.name: resolve(spec, registry) for spec in protocol.topologies()}
    llm = UserSettings(model=user_model)
    questions, skipped = [], 0
    tasks: dict[tuple[str, str], Any] = {}
    for rec in _records(run_dir):
        asks = [c for c in rec.get("calls", []) if c.get("name") == "ask_user" and c.get("status") == "ok"]
        topo = topologies.get(rec.get("topology") or "")
        if not asks or topo is None:
            continue
        key = (topo.name, rec["task_id"])
        if key not in tasks:
            m = INDEX.search(rec["task_id"])
            if m is None:
                skipped += 1
                continue
            found = topo.tasks("test", protocol.tasks.test.seed, int(m.group(1)) + 1)
            tasks.update({(topo.name, t.id): t for t in found})
        task = tasks.get(key)
        if task is None:
            skipped += 1
            continue
        ref = topo.suite.make_world(task)
        with use_user(llm, options):
            other = topo.suite.make_world(task)
        ref_user: Any = getattr(ref, "user", None)
        other_user: Any = getattr(other, "user", None)
        if not (hasattr(ref_user, "read") and hasattr(other_user, "read")):
            skipped += 1
            ref.close()
            other.close()
            continue
        try:
            for call in rec["calls"]:
                if call.get("status") == "skipped":
                    continue
                args = call.get("arguments") or {}
                if call["name"] == "ask_user" and call.get("status") == "ok":
                    q = str(args.get("question", ""))
                    questions.append({"episode_id": rec.get("episode_id"), "question": q,
                                      "reference": list(label(ref_user.read(q))),
                                      "user_model": list(label(other_user.read(q)))})
                    continue
                for world in (ref, other):
                    try:
                        world.call(call["name"], args)
                    except (ToolError, TypeError, WorldError):
                        pass  # it failed in the episode too (or its arguments were malformed)
        finally:
            ref.close()
            other.close()
    return {"questions": questions, "skipped_episodes": skipped}


def agreement(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-slot counts and agreement, and the exact-match share (module docstring)."""
    n = len(questions)
    per: dict[str, dict[str, Any]] = {}
    for slot in SLOTS:
        ref = [slot in q["reference"] for q in questions]
        oth = [slot in q["user_model"] for q in questions]
        per[slot] = {"reference": sum(ref), "user_model": sum(oth),
                     "both": sum(a and b for a, b in zip(ref, oth, strict=True)),
                     "agreement": (sum(a == b for a, b in zip(ref, oth, strict=True)) / n) if n else None}
    exact = sum(q["reference"] == q["user_model"] for q in questions)
    return {"n_questions": n, "exact": exact / n if n else None, "slots": per,
            "disagreements": [q for q in questions if q["reference"] != q["user_model"]][:50]}


def user_agreement(run_dir: str | Path, user_model: str, options: Any = None, protocol: Any = None,
                   suites_dirs: list | tuple = ()) -> dict[str, Any]:
    """Replay, compare, and write ``user_agreement.json`` into the run folder; returns its content.
    ``protocol``, ``suites_dirs``: the caller's (:func:`replay_questions`)."""
    from topoeval.policies.user_model import close_user_models

    try:
        replay = replay_questions(Path(run_dir), user_model, options, protocol, suites_dirs)
    except WorldError as exc:  # the user model could not answer (after its backend's retries)
        raise UserError(f"{exc} (check --user-model and --api-base)") from None
    finally:
        close_user_models()
    out = {"user_model": user_model, **agreement(replay["questions"]), "skipped_episodes": replay["skipped_episodes"]}
    write_json_atomic(Path(run_dir) / "user_agreement.json", out)
    return out
