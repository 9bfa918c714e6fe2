"""One BFCL episode's world: the agent's API instances, a ground-truth twin advanced in lockstep,
and BFCL's per-turn check.

The agent's calls arrive as ordinary validated tool calls (``World.call``); nothing is ever
``eval``-ed. Each call's result is kept in BFCL's own string form (a ``str`` as is, a ``dict`` as
``json.dumps``, anything else ``str()``, an exception as ``"Error during execution: ..."``), which
is also what the agent reads back.

When the agent ends user turn *i* the runner calls :meth:`BfclWorld.end_instruction`; if the
ground truth of turn *i* is not empty, the twin executes it and the turn passes when (BFCL's rule,
``multi_turn_checker``):

1. the agent made at least one call during the turn,
2. every public attribute of every agent instance equals the twin's, and
3. every ground-truth result of the turn appears among the agent's results of *all* turns so far
   (as a multiset, order free).

Turns with an empty ground truth (``miss_func`` / ``miss_param``: the request cannot be served
yet, and the right move is to make no call and say what is missing) are not checked themselves;
whatever the agent changed there is caught by the state check of the next checked turn, exactly
as in BFCL. Whether the agent made no call there at all (BFCL's irrelevance rule, which BFCL
computes but does not score) is kept apart, as ``abstained``. Each verdict is an episode event
``{"type": "turn_check", ...}``.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from datetime import date, datetime
from typing import Any

from topoeval.core.suite import Effect, ToolError, World

from . import data
from .calls import parse_call


def bfcl_result(value: Any) -> str:
    """A return value as BFCL's executor records it."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def load_instances(classes: list[str], initial_config: dict[str, Any], long_context: bool) -> dict[str, Any]:
    """Fresh instances of ``classes``, each loaded with its scenario as BFCL loads it."""
    out = {}
    for name in classes:
        instance = data.api_class(name)()
        if name not in data.STATELESS:
            instance._load_scenario(copy.deepcopy(initial_config.get(name, {})), long_context=long_context)
        out[name] = instance
    return out


def public_state_differences(agent: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """``"Class.attribute"`` for every public attribute where the agent's instance differs from the twin's."""
    out = []
    for name, ref in reference.items():
        mine = agent[name]
        for attr in vars(ref):
            if not attr.startswith("_") and getattr(mine, attr, None) != getattr(ref, attr):
                out.append(f"{name}.{attr}")
    return out


def missing_results(expected: list[str], seen: list[str]) -> list[str]:
    """Expected results not found in ``seen``, each occurrence consumed once (BFCL's unordered subset)."""
    pool = Counter(seen)
    missing = []
    for item in expected:
        if pool[item] > 0:
            pool[item] -= 1
        else:
            missing.append(item)
    return missing


class BfclWorld(World):
    """The instances of one task's involved classes, plus their ground-truth twin."""

    def __init__(self, task_data: dict[str, Any]):
        self.events: list[dict[str, Any]] = []
        classes = task_data["involved_classes"]
        config, long_context = task_data["initial_config"], task_data["long_context"]
        self.instances = load_instances(classes, config, long_context)
        self.reference = load_instances(classes, config, long_context)
        self.ground_truth: list[list[str]] = task_data["ground_truth"]
        self.methods = {name: cls for cls in classes for name, (owner, _) in data.tool_docs().items() if owner == cls}
        self.irreversible = {s.name for s in data.tool_specs() if s.effect == Effect.irreversible}
        #: BFCL result strings of the agent's calls, per user turn
        self.results: list[list[str]] = [[] for _ in self.ground_truth]
        self.turn = 0
        #: per checked turn: (turn index, passed)
        self.checks: list[tuple[int, bool]] = []
        #: per handed-back turn with an empty ground truth: whether the agent made no call in it
        self.abstentions: list[bool] = []
        self.turns_ended = 0

    # -- the agent's side -------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        owner = self.methods.get(name)
        if owner is None:
            raise ToolError(f"'{name}' belongs to no API of this task")
        before = self._public(owner) if name in self.irreversible else None
        try:
            result = bfcl_result(getattr(self.instances[owner], name)(**arguments))
        except Exception as exc:  # BFCL records the exception as the call's result
            text = f"Error during execution: {exc}"
            self.results[min(self.turn, len(self.results) - 1)].append(text)
            raise ToolError(text) from None
        self.results[min(self.turn, len(self.results) - 1)].append(result)
        if before is not None and self._public(owner) != before:
            self.events.append({"type": "commit", "tool": name, "object": commit_object(name, arguments),
                                "irreversible": True})
        return result

    def _public(self, owner: str) -> dict[str, Any]:
        return jsonable({k: v for k, v in vars(self.instances[owner]).items() if not k.startswith("_")})

    # -- turn boundaries ----------------------------------------------------------------------
    def end_instruction(self, index: int) -> None:
        """The agent handed user turn ``index`` back: advance the twin and check the turn."""
        self.turns_ended = index + 1
        self.turn = index + 1
        if index >= len(self.ground_truth):
            return
        if not self.ground_truth[index]:
            self.abstentions.append(not self.results[index])
            self.events.append({"type": "turn_check", "instruction": index, "passed": None,
                                "abstained": not self.results[index]})
            return
        expected = [self._reference_call(c) for c in self.ground_truth[index]]
        reasons = []
        if not self.results[index]:
            reasons.append("no call in a turn that needs one")
        diff = public_state_differences(self.instances, self.reference)
        if diff:
            reasons.append("state differs from the ground truth: " + ", ".join(diff))
        missing = missing_results(expected, [r for turn in self.results[: index + 1] for r in turn])
        if missing:
            reasons.append(f"{len(missing)} ground-truth result(s) missing, e.g. {missing[0][:120]!r}")
        self.checks.append((index, not reasons))
        self.events.append({"type": "turn_check", "instruction": index, "passed": not reasons,
                            "reason": "; ".join(reasons) or None})

    def _reference_call(self, text: str) -> str:
        return execute(self.reference, self.methods, text)

    @property
    def passed(self) -> bool:
        """Every user turn was handed back and every checked turn passed (BFCL's verdict)."""
        return self.turns_ended >= len(self.ground_truth) and all(ok for _, ok in self.checks)

    # -- snapshots ------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Every attribute of every instance (the working directory as a path), as JSON."""
        return {name: instance_state(inst) for name, inst in self.instances.items()}


def execute(instances: dict[str, Any], methods: dict[str, str], text: str) -> str:
    """Run one ground-truth call string on ``instances`` (class name -> instance), as BFCL's
    executor records it; ``methods``: tool name -> its class."""
    name, arguments = parse_call(text, jsonable=False)
    owner = methods.get(name)
    try:
        if owner is None:
            raise NameError(f"name '{name}' is not defined")
        return bfcl_result(getattr(instances[owner], name)(**arguments))
    except Exception as exc:
        return f"Error during execution: {exc}"


def commit_object(name: str, arguments: dict[str, Any]) -> str:
    """What an irreversible call acts on, as the risk metric compares it: the call itself."""
    return f"{name}({json.dumps(arguments, sort_keys=True, ensure_ascii=False)})"


def instance_state(instance: Any) -> dict[str, Any]:
    """The public attributes (BFCL's state) plus the file system's working directory, as JSON.

    Other private attributes are left out: random generators, descriptions, and caches filled by
    reads (``TravelAPI._flight_cost_lookup``).
    """
    out = {key: jsonable(value) for key, value in vars(instance).items() if not key.startswith("_")}
    if getattr(instance, "_current_dir", None) is not None:
        out["cwd"] = _path(instance._current_dir)
    return out


def _path(directory: Any) -> str:
    parts = []
    while directory is not None:
        parts.append(directory.name)
        directory = directory.parent
    return "/" + "/".join(reversed(parts))


def jsonable(value: Any, _seen: frozenset[int] = frozenset()) -> Any:
    """Instance attributes as JSON: file-system objects by their content, sets sorted, dates as
    text; an object that contains itself (a directory moved into itself) is cut at ``"<cycle>"``."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if id(value) in _seen:
        return "<cycle>"
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, seen) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v, seen) for v in value), key=repr)
    kind = type(value).__name__
    if kind == "Directory":
        return {"contents": jsonable(value.contents, seen)}
    if kind == "File":
        return {"content": value.content}
    return {k: jsonable(v, seen) for k, v in vars(value).items() if not k.startswith("_") and k != "parent"}
