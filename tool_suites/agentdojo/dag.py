"""The gold dependency DAG of an AgentDojo user task, derived from its ground-truth calls.

AgentDojo gives each user task a ground truth: a list of calls that solves it. Its order is a
valid schedule but says nothing about which call needs which, so the DAG is derived from a replay
of that list (:func:`derive`). Call ``j`` depends on an earlier call ``i`` when

1. **data** — one of ``j``'s identifying argument values (not its free-text ``loose_args``) is not
   stated in the task's prompt but appears in ``i``'s result: an id, an IBAN, a URL, a channel.
   When ``i`` was itself given that value, its result only echoes it, and ``j`` depends on ``i``
   only if it *selects* from what ``i`` was given (``i`` rated four hotels, ``j`` asks for the
   address of one of them; not when ``j`` asks for the prices of the same four);
2. **decision** — ``j`` changes the world (effect ``write`` or ``irreversible``) and ``i`` is one
   of the reads just before it: a write acts on what those reads found (the amount to refund, the
   channel with the most members, the summary to post), which values alone cannot show. "Just
   before" is the run of reads that precedes ``j``'s run of writes in the ground truth (a
   composite task's second part does not depend on its first part's reads);
3. **creation** — ``i`` brought into existence an object ``j`` names (the tool's ``creates``
   argument: invite Dora, then message Dora).

Where these rules are wrong for a task, ``dependencies`` in the domain's annotations file replaces
the derived dependencies of the calls it names (indices into AgentDojo's ground-truth list).

A read call identical to an earlier one is dropped (AgentDojo's composite tasks concatenate two
ground truths, repeating a look-up); its dependents point at the first copy.

Two lists come out, with the same node ids (``c<index>``) and dependencies: the **plan** keeps
every argument (the oracle replays it), the **gold** keeps only the identifying arguments (the
metrics match an agent's calls against it, so a different email body or search phrase still
counts as the same step).
"""

from __future__ import annotations

import re
from typing import Any

from topoeval.core.suite import GoldCall

from .overlay import DomainAnnotations

_MIN_SUBSTRING = 4  # shorter strings must equal a whole value of the result to count


def _norm(text: Any) -> str:
    return " ".join(str(text).lower().split())


def _atoms(value: Any):
    """Scalar values inside an argument (list items, dict values), booleans and None left out."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _atoms(v)
    elif isinstance(value, list):
        for v in value:
            yield from _atoms(v)
    elif value is not None and not isinstance(value, bool):
        yield value


def leaves(result: Any) -> set[str]:
    """Every scalar of a tool result (keys included), normalised: what 'appears in the result' means
    for short values and numbers."""
    if hasattr(result, "model_dump"):
        result = result.model_dump(mode="json")
    out: set[str] = set()
    if isinstance(result, dict):
        for k, v in result.items():
            out.add(_norm(k))
            out |= leaves(v)
    elif isinstance(result, (list, tuple)):
        for v in result:
            out |= leaves(v)
    elif result is not None and not isinstance(result, bool):
        out.add(_number(result) if isinstance(result, (int, float)) else _norm(result))
    return out


def _number(x: int | float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _stated(value: Any, prompt: str) -> bool:
    """Whether the user's prompt already gives ``value``."""
    text = _number(value) if isinstance(value, (int, float)) else _norm(value)
    if len(text) >= _MIN_SUBSTRING and not isinstance(value, (int, float)):
        return text in prompt
    return re.search(rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)", prompt) is not None


def _found(value: Any, text: str, values: set[str]) -> bool:
    """Whether a call's result (its text and its scalar values) contains ``value``."""
    if isinstance(value, (int, float)):
        return _number(value) in values
    v = _norm(value)
    return v in values or (len(v) >= _MIN_SUBSTRING and v in text)


def dedupe(calls: list[tuple[str, dict[str, Any]]], effects: dict[str, str]) -> list[int]:
    """Indices of the calls kept: a read call identical to an earlier one is dropped."""
    seen: list[tuple[str, dict[str, Any]]] = []
    kept = []
    for i, call in enumerate(calls):
        if effects.get(call[0]) == "read" and call in seen:
            continue
        seen.append(call)
        kept.append(i)
    return kept


def derive(
    prompt: str,
    calls: list[tuple[str, dict[str, Any]]],
    observations: list[str],
    results: list[set[str]],
    annotations: DomainAnnotations,
    overrides: dict[int, list[int]] | None = None,
) -> tuple[list[GoldCall], list[GoldCall]]:
    """(plan, gold) of one user task from its replayed ground truth (see the module docstring).

    ``observations[i]``/``results[i]`` are the text and the scalar values of call ``i``'s result.
    """
    effects = {name: a.effect for name, a in annotations.tools.items()}
    prompt_n = _norm(prompt)
    texts = [_norm(o) for o in observations]
    kept = dedupe(calls, effects)
    first_copy = {i: next(k for k in kept if calls[k] == calls[i]) for i in range(len(calls))}
    overrides = overrides or {}
    segment = _read_segments([effects[name] for name, _ in calls], kept)
    plan, gold = [], []
    for j in kept:
        name, args = calls[j]
        tool = annotations.tools[name]
        ident = {k: v for k, v in args.items() if k not in tool.loose_args}
        if j in overrides:
            deps = {first_copy[i] for i in overrides[j]}
        else:
            values = [a for a in _atoms(ident) if not _stated(a, prompt_n)]
            named = {_norm(a) for a in _atoms(ident)}
            mine = _holders(ident)
            deps = set(segment[j])
            for i in kept:
                if i >= j:
                    break
                given = _holders(calls[i][1])
                if any(_found(v, texts[i], results[i]) and mine[_key(v)] < given.get(_key(v), 10**9) for v in values):
                    deps.add(i)
                creates = annotations.tools[calls[i][0]].creates
                if creates and _norm(calls[i][1].get(creates)) in named:
                    deps.add(i)
        depends_on = [f"c{i}" for i in sorted(deps)]
        plan.append(GoldCall(id=f"c{j}", tool=name, arguments=dict(args), depends_on=depends_on))
        gold.append(GoldCall(id=f"c{j}", tool=name, arguments=ident, depends_on=depends_on))
    return plan, gold


def _key(value: Any) -> str:
    return _number(value) if isinstance(value, (int, float)) else _norm(value)


def _holders(args: dict[str, Any]) -> dict[str, int]:
    """Each scalar value of ``args`` -> the number of values in the (smallest) argument holding it."""
    out: dict[str, int] = {}
    for value in args.values():
        atoms = list(_atoms(value))
        for a in atoms:
            out[_key(a)] = min(out.get(_key(a), 10**9), len(atoms))
    return out


def _read_segments(effects: list[str], kept: list[int]) -> dict[int, list[int]]:
    """For each kept write, the kept reads of the run of reads just before its run of writes."""
    out: dict[int, list[int]] = {}
    reads: list[int] = []
    previous = "read"
    for i in kept:
        if effects[i] == "read":
            if previous != "read":
                reads = []
            reads.append(i)
        else:
            out[i] = list(reads)
        previous = effects[i]
    return {i: out.get(i, []) for i in kept}
