"""A designed matrix: the topologies a ``matrix.design`` entry generates around its base, and its checks.

A design names a base topology and *moves*, each changing the base along one axis (transforms and/or
suite parameters). Its ``plan`` says which combinations run (:data:`topoeval.protocol.schema.PLANS`):

- ``star``: the base and each move alone — one main effect per move (k + 1 topologies);
- ``pairs``: the star plus pairs of moves (every pair, or those listed in ``pairs``) — their interactions;
- ``factorial``: every combination (2^k);
- ``half_factorial``: the combinations of an even number of moves (2^(k-1), the base included): the
  defining relation is the product of all moves, so a main effect is aliased with the interaction of the
  k − 1 other moves — the attribution assumes those away only where the additive model allows, and
  reports what stays confounded.

A generated topology is named ``base+move+move`` (moves in declared order), applies the base's
transforms then each move's, and takes the base's parameters updated by each move's. Each carries its
base and moves (``TopologySpec._moves``) and where the YAML declares it (``_origin``), so an error in a
generated topology points at the move that made it. Tasks are drawn with the same seed and index on
every topology of a base, so the topologies of one design share their tasks (the suites keep axis
parameters out of a task's scenario) and the attribution pairs them task by task.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the schema calls this module to expand a design: no import back at run time
    from topoeval.protocol.schema import DesignSpec, MatrixSpec, TopologySpec

Loc = tuple[str | int, ...]


def combos(design: DesignSpec) -> list[tuple[str, ...]]:
    """The combinations of moves the plan runs, base (no move) first, each in declared order."""
    names = [m.name for m in design.moves]
    if design.plan == "star":
        return [(), *((n,) for n in names)]
    if design.plan == "pairs":
        wanted = ([tuple(p) for p in design.pairs if len(p) == 2 and all(n in names for n in p)]
                  if design.pairs is not None else list(combinations(names, 2)))
        pairs = [tuple(sorted(p, key=names.index)) for p in wanted]
        return [(), *((n,) for n in names), *dict.fromkeys(p for p in pairs if p[0] != p[1])]
    every = [c for size in range(len(names) + 1) for c in combinations(names, size)]
    return every if design.plan == "factorial" else [c for c in every if len(c) % 2 == 0]


def topology_name(base: str, moves: tuple[str, ...]) -> str:
    """``base`` or ``base+move+move``."""
    return "+".join([base, *moves])


def generate_topologies(designs: list[DesignSpec]) -> list[TopologySpec]:
    """Every design's topologies, in order (base first, then the combinations of its plan)."""
    out: list[TopologySpec] = []
    for d, design in enumerate(designs):
        moves = {m.name: (j, m) for j, m in enumerate(design.moves)}
        for combo in combos(design):
            params = dict(design.base.params)
            transforms = list(design.base.transforms)
            for name in combo:
                params.update(moves[name][1].params)
                transforms += moves[name][1].transforms
            topo = design.base.model_copy(update={"name": topology_name(design.base.name, combo),
                                                  "params": params, "transforms": transforms})
            topo._moves = (design.base.name, combo)
            topo._origin = (("matrix", "design", d, "moves", moves[combo[-1]][0]) if combo
                            else ("matrix", "design", d, "base"))
            out.append(topo)
    return out


def design_errors(matrix: MatrixSpec) -> list[tuple[Loc, str]]:
    """What the schema cannot say of a design: move names, pairs, a base with a role, a move whose transform
    moves another axis, two moves of one topology setting a parameter to different values."""
    from topoeval.core.errors import did_you_mean
    from topoeval.transforms import known_transforms, transform_axis

    known = known_transforms()
    errors: list[tuple[Loc, str]] = []
    for d, design in enumerate(matrix.design):
        loc: Loc = ("matrix", "design", d)
        if design.base.role is not None or design.base.axis is not None:
            errors.append(((*loc, "base"), "a design's base takes no role or axis (its moves name their axes)"))
        names = [m.name for m in design.moves]
        for j, move in enumerate(design.moves):
            if names.index(move.name) != j:
                errors.append(((*loc, "moves", j, "name"), f"duplicate move name '{move.name}'"))
            for t, tr in enumerate(move.transforms):
                if tr.name in known and transform_axis(tr.name) != move.axis:
                    errors.append(((*loc, "moves", j, "transforms", t, "name"),
                                   f"'{tr.name}' moves the {transform_axis(tr.name)} axis, not {move.axis}"))
        if design.pairs is not None and design.plan != "pairs":
            errors.append(((*loc, "pairs"), f"pairs apply to plan: pairs only (this plan is {design.plan})"))
        for p, pair in enumerate(design.pairs or []):
            if len(pair) != 2 or len(set(pair)) != 2:
                errors.append(((*loc, "pairs", p), f"a pair names two different moves, not {pair}"))
            for name in pair:
                if name not in names:
                    errors.append(((*loc, "pairs", p), f"no move named '{name}'{did_you_mean(name, names)}"))
        moves = {m.name: (j, m) for j, m in enumerate(design.moves)}
        said: set[tuple[str, str]] = set()
        for combo in combos(design):
            for a, b in combinations(combo, 2):
                for key in set(moves[a][1].params) & set(moves[b][1].params):
                    if moves[a][1].params[key] != moves[b][1].params[key] and (a + b, key) not in said:
                        said.add((a + b, key))
                        errors.append(((*loc, "moves", moves[b][0], "params", key),
                                       f"moves '{a}' and '{b}' run together and set {key} to different values"))
    return errors


def design_record(matrix: MatrixSpec | None, names: list[str]) -> list[dict[str, Any]]:
    """run.json's ``matrix.design``: per design, its base, plan, each move's axis and, per topology of the run
    it generated (of ``names``), the moves applied — what the axis attribution reads from the run folder."""
    if matrix is None or not matrix.design:
        return []
    out = []
    for design in matrix.design:
        topologies = {topology_name(design.base.name, c): list(c) for c in combos(design)}
        ran = {n: moves for n, moves in topologies.items() if n in names}
        if ran:  # a design none of whose topologies runs (--topology kept others) has nothing to record
            out.append({"base": design.base.name, "plan": design.plan,
                        "moves": {m.name: m.axis for m in design.moves}, "topologies": ran})
    return out
