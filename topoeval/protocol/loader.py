"""Loading protocol YAML with errors that name the file, the line and the field path.

Every problem becomes one line such as::

    protocols/x.yaml:7 test[1].suite: unknown suite 'travl' (did you mean 'travel'?)

and all of them are raised together as :class:`~topoeval.core.errors.ProtocolErrors`.
"""

from __future__ import annotations

import hashlib
import types
import typing
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from topoeval.core.errors import ProtocolErrors, UserError
from topoeval.core.paths import protocol_folder
from topoeval.core.suite import canonical_json
from topoeval.core.yamlfile import YamlRejected, compose_yaml, read_yaml_file
from topoeval.protocol.discovery import SuiteRegistry, did_you_mean, resolve_protocol_path
from topoeval.protocol.schema import Protocol, TopologySpec

Loc = tuple[str | int, ...]


def load_protocol(path_or_name: str | Path, registry: SuiteRegistry | None = None) -> Protocol:
    """Load and fully validate a protocol (a path, or the name of a shipped one)."""
    path = resolve_protocol_path(path_or_name)
    try:
        text = read_yaml_file(path)  # UTF-8 only: any other byte is one line with its offset
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    except YamlRejected as exc:
        raise ProtocolErrors([str(exc)]) from None
    return parse_protocol(text, str(path), registry or SuiteRegistry(), folder=path.resolve().parent)


def parse_protocol(text: str, filename: str, registry: SuiteRegistry, folder: str | Path | None = None) -> Protocol:
    """Validate protocol YAML ``text``; ``filename`` only labels the errors. ``folder``: where
    relative paths in the topologies' parameters are read from (the protocol file's folder; None:
    the current directory)."""
    try:
        root, data = compose_yaml(text, filename)  # no aliases, bounded nesting: linear in the file's size
    except YamlRejected as exc:
        raise ProtocolErrors([str(exc)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ProtocolErrors([f"{filename}:{line}: YAML syntax error: {problem}"]) from None
    if root is None or data is None:
        raise ProtocolErrors([f"{filename}:1: empty protocol file"])
    if not isinstance(data, dict):
        raise ProtocolErrors([f"{filename}:1: a protocol is a mapping of fields, got {type(data).__name__}"])

    errors: list[tuple[Loc, str]] = list(_duplicate_keys(root))
    shape = _shape_errors(data)
    errors += shape
    try:
        protocol = Protocol.model_validate(data)
    except ValidationError as exc:
        # the shape check at the top level is said above, field by field, when the file shows it
        errors += [(tuple(e["loc"]), _message(e)) for e in exc.errors() if not (shape and not e["loc"])]
        protocol = None
    if protocol is not None:
        if folder is not None:
            for topo in [*protocol.declared_topologies(), *protocol.ladder]:
                topo._folder = str(folder)
        if protocol.matrix is not None and not errors:
            errors += skip_unavailable(protocol, registry)
        with protocol_folder(folder):
            errors += semantic_errors(protocol, registry)
    if errors:
        raise ProtocolErrors([f"{filename}:{_line_of(root, loc)} {format_loc(loc)}: {msg}" for loc, msg in errors])
    assert protocol is not None  # a protocol that did not validate has errors
    return protocol


def _shape_errors(data: dict[str, Any]) -> list[tuple[Loc, str]]:
    """One-way (train + test) or matrix, named field by field: what is missing, or what a matrix cannot have."""
    if "matrix" in data:
        return [((key,), "a matrix protocol lists its topologies under matrix.topologies: remove this field "
                 "(a model's own topology comes from its training record or --trained-on)")
                for key in ("train", "test", "ladder") if key in data]
    return [((key,), "required field is missing (or give matrix: {topologies: [...]} instead of train and test)")
            for key in ("train", "test") if key not in data]


def _matrix_errors(protocol: Protocol) -> list[tuple[Loc, str]]:
    """A matrix's topologies: unique names, no role or axis (the diagonal is per model), demos from the target."""
    from topoeval.protocol.design import design_errors

    assert protocol.matrix is not None
    errors: list[tuple[Loc, str]] = design_errors(protocol.matrix)
    seen: dict[str, Loc] = {}
    for i, topo in enumerate(protocol.matrix.topologies):
        loc = matrix_loc(i, topo)
        same_design = topo._origin is not None and seen.get(topo.name, ())[:3] == topo._origin[:3]
        if topo.name in seen and not same_design:  # within one design, a duplicate move name is said instead
            errors.append(((*loc, "name"), f"duplicate topology name '{topo.name}' (also "
                           f"{format_loc(seen[topo.name])})"))
        seen.setdefault(topo.name, loc)
        if topo._origin is not None:  # a generated topology: its base's role and axis are checked once
            continue
        if topo.role is not None:
            errors.append(((*loc, "role"), "a matrix topology takes no role: which one is a model's own comes from "
                           "the model (its training record, or --trained-on MODEL=TOPOLOGY)"))
        if topo.axis is not None:
            errors.append(((*loc, "axis"), "a matrix topology takes no axis (the axes that differ are read from "
                           "the topologies' descriptors)"))
    if protocol.baselines.demos_from == "source":
        errors.append((("baselines", "demos_from"), "a matrix has no single train topology to draw demonstrations "
                       "from: use demos_from: target"))
    return errors


class SkippedTopology(UserWarning):
    """A matrix topology left out because its suite cannot run here (an optional extra missing)."""


def skip_unavailable(protocol: Protocol, registry: SuiteRegistry) -> list[tuple[Loc, str]]:
    """Leave out of a transfer matrix the topologies whose suite cannot run here (its ``unavailable()``
    line: the extra to install), one warning each; an error when fewer than two remain."""
    assert protocol.matrix is not None
    kept = []
    for topo in protocol.matrix.topologies:
        reason = registry.get(topo.suite).unavailable() if topo.suite is not None and topo.suite in registry else None
        if reason:
            warnings.warn(f"matrix topology '{topo.name}' skipped: {reason}", SkippedTopology, stacklevel=2)
        else:
            kept.append(topo)
    if len(kept) == len(protocol.matrix.topologies):
        return []
    if len(kept) < 2:
        return [(("matrix", "topologies"), f"only {len(kept)} topology can run here once those whose suite is "
                 "not installed are skipped; a matrix needs two")]
    protocol.matrix.topologies[:] = kept
    return []


def matrix_loc(i: int, topo: TopologySpec) -> Loc:
    """Where matrix topology ``i`` is declared: ``matrix.topologies[i]``, or the design move that generated it."""
    return topo._origin if topo._origin is not None else ("matrix", "topologies", i)


def semantic_errors(protocol: Protocol, registry: SuiteRegistry) -> list[tuple[Loc, str]]:
    """Checks across fields and against the suite registry."""
    from topoeval.transforms import apply_transforms, known_transforms, transform_args_model
    from topoeval.transforms.args import arg_errors

    errors: list[tuple[Loc, str]] = []
    if protocol.matrix is not None:
        errors += _matrix_errors(protocol)
    elif protocol.train is not None and protocol.train.role is not None:
        errors.append((("train", "role"), "the train topology takes no role"))
    seen: dict[str, int] = {}
    for i, topo in enumerate(protocol.test):
        if topo.role is None:
            errors.append((("test", i, "role"), f"test topology '{topo.name}' needs a role: id, ood or ladder"))
        if topo.name in seen:
            errors.append((("test", i, "name"),
                           f"duplicate topology name '{topo.name}' (also test[{seen[topo.name]}])"))
        seen.setdefault(topo.name, i)
    if protocol.matrix is None and not any(t.role == "id" for t in protocol.test):
        errors.append((("test",), "needs at least one topology with role: id (the test split of the train topology)"))

    test_names = set(seen)
    for i, step in enumerate(protocol.ladder):
        if step.suite is None:
            if step.name not in test_names:
                errors.append((("ladder", i, "suite"), f"a ladder step needs a suite, or the name of a test topology "
                               f"(not '{step.name}'){did_you_mean(step.name, sorted(test_names))}"))
            elif step.params or step.transforms or step.n_tasks is not None:
                errors.append((("ladder", i), f"step '{step.name}' is the test topology of that name: "
                               "give it only a name and an axis"))
            continue
        if step.name in seen:
            errors.append((("ladder", i, "name"), f"duplicate topology name '{step.name}'"))
        seen.setdefault(step.name, i)
        if step.role not in (None, "ladder"):
            errors.append((("ladder", i, "role"), "ladder steps take no role (or role: ladder)"))
    entries: list[tuple[Loc, Any]] = [(("train",), protocol.train)] if protocol.train is not None else []
    entries += [(("test", i), t) for i, t in enumerate(protocol.test)]
    if protocol.matrix is not None:
        entries += [(matrix_loc(i, t), t) for i, t in enumerate(protocol.matrix.topologies)]
    entries += [(("ladder", i), t) for i, t in enumerate(protocol.ladder) if t.suite is not None]
    transforms = known_transforms()
    sized: dict[Loc, tuple[Any, Any]] = {}  # loc -> (suite with its transforms, parsed params)
    for loc, topo in entries:
        if topo.suite is None:
            errors.append(((*loc, "suite"), "missing: every topology names its suite"))
            continue
        if topo.suite not in registry:
            errors.append(((*loc, "suite"),
                           f"unknown suite '{topo.suite}'{did_you_mean(topo.suite, registry.names())}"))
            continue
        suite = registry.get(topo.suite)
        params_ok = True
        try:
            parsed = suite.parse_params(topo.params)
        except ValidationError as exc:
            params_ok = False
            errors += [((*loc, "params", *e["loc"]), _message(e)) for e in exc.errors()]
        else:  # the suite's own task data against its tools (e.g. a gold plan's misspelled tool)
            try:
                errors += [((*loc, "params"), problem) for problem in suite.task_problems(parsed)
                           if all(problem != msg for _, msg in errors)]
            except UserError:  # the tools cannot be listed (a server that does not start): the episodes say so
                pass
        args_ok = True
        for j, tr in enumerate(topo.transforms):
            if tr.name not in transforms:
                hint = did_you_mean(tr.name, sorted(transforms)) or (
                    f" (known: {', '.join(sorted(transforms))})" if transforms else " (no transforms are defined yet)"
                )
                errors.append(((*loc, "transforms", j, "name"), f"unknown transform '{tr.name}'{hint}"))
                continue
            bad_args = arg_errors(transform_args_model(tr.name), tr.args)
            errors += [((*loc, "transforms", j, "args", *where), f"{tr.name}: {msg}") for where, msg in bad_args]
            args_ok = args_ok and not bad_args
        if args_ok and all(tr.name in transforms for tr in topo.transforms):
            try:
                transformed = apply_transforms(suite, topo.transforms)
            except UserError as exc:
                errors.append(((*loc, "transforms"), str(exc)))
            else:
                if topo.transforms and params_ok:  # parameters the transforms fix must agree with the given ones
                    try:
                        transformed.parse_params(topo.params)
                    except ValidationError as exc:
                        params_ok = False
                        errors += [((*loc, "params", *e["loc"]), f"with the transforms: {_message(e)}")
                                   for e in exc.errors()]
                if params_ok:
                    sized[loc] = (transformed, transformed.parse_params(topo.params))
    errors += _pool_errors(protocol, sized)
    errors += _ladder_standstill_errors(protocol, sized)

    biggest = max(protocol.baselines.shots)
    if biggest > protocol.tasks.fewshot.n:
        errors.append(
            (
                ("baselines", "shots"),
                f"asks for {biggest} demonstrations but tasks.fewshot.n is {protocol.tasks.fewshot.n}",
            )
        )
    return list(dict.fromkeys(errors))  # a design's base error is said once, not once per generated topology


def _pool_errors(protocol: Protocol, sized: dict[Loc, tuple[Any, Any]]) -> list[tuple[Loc, str]]:
    """Task counts above what a split holds, for suites with a fixed set of tasks (``pool_size``;
    a generator has no limit)."""
    errors: list[tuple[Loc, str]] = []
    failed: set[Loc] = set()

    def size(loc: Loc, split: str) -> int | None:
        suite, params = sized[loc]
        if loc in failed:
            return None
        try:
            return suite.pool_size(params, split)
        except UserError as exc:  # e.g. the suite's optional dependency is missing: said once
            failed.add(loc)
            if all(str(exc) != msg for _, msg in errors):
                errors.append(((*loc, "suite"), str(exc)))
            return None

    def label(topo: Any) -> str:
        return f"'{topo.name}' ({topo.suite})"

    tests: list[tuple[Loc, TopologySpec]] = [(("test", i), t) for i, t in enumerate(protocol.test)]
    tests += [(("ladder", i), t) for i, t in enumerate(protocol.ladder) if t.suite is not None]
    if protocol.matrix is not None:
        tests += [(matrix_loc(i, t), t) for i, t in enumerate(protocol.matrix.topologies)]
    tests = [(loc, t) for loc, t in tests if loc in sized]
    for loc, topo in tests:
        n = topo.n_tasks if topo.n_tasks is not None else protocol.tasks.test.n
        pool = size(loc, "test")
        if pool is not None and n > pool:
            where, what = (((*loc, "n_tasks"), f"n_tasks is {n}") if topo.n_tasks is not None
                           else (loc, f"tasks.test.n is {n}"))
            errors.append((where, f"{what} but the test split of {label(topo)} holds {pool} tasks"))
    if max(protocol.baselines.shots) > 0:
        donors: list[tuple[Loc, TopologySpec]] = (tests if protocol.baselines.demos_from == "target"
                                                  else [(("train",), protocol.train)] if protocol.train else [])
        for loc, topo in donors:
            pool = size(loc, "fewshot") if loc in sized else None
            if pool is not None and protocol.tasks.fewshot.n > pool:
                written = ("fewshot" in protocol.tasks.model_fields_set
                           and "n" in protocol.tasks.fewshot.model_fields_set)
                what = f"tasks.fewshot.n is {protocol.tasks.fewshot.n}" + (
                    "" if written else " (the default: the protocol does not set it)")
                fix = (f"set tasks.fewshot.n to {pool} or fewer" if pool else
                       "give the topology fewshot tasks, or set baselines.shots to [0] (no demonstrations)")
                errors.append((("tasks", "fewshot", "n"), f"{what} but the fewshot split of {label(topo)}, where "
                               f"demonstrations for baselines.shots {protocol.baselines.shots} come from, holds "
                               f"{pool} tasks: {fix}"))
    for split in ("train", "dev"):
        spec = getattr(protocol.tasks, split)
        pool = size(("train",), split) if spec is not None and ("train",) in sized else None
        if pool is not None and spec is not None and protocol.train is not None and spec.n > pool:
            errors.append((("tasks", split, "n"), f"tasks.{split}.n is {spec.n} but the {split} split of the train "
                           f"topology {label(protocol.train)} holds {pool} tasks"))
    return errors


def _ladder_standstill_errors(protocol: Protocol, sized: dict[Loc, tuple[Any, Any]]) -> list[tuple[Loc, str]]:
    """A ladder step that is the same topology as the one before it (the first step: the first ID topology,
    where the curve starts) moves no axis: same suite, same transforms, same parameters once the suite has
    parsed them (a default written out is the default)."""
    test_locs = {t.name: ("test", i) for i, t in reversed(list(enumerate(protocol.test)))}
    start = next((t.name for t in protocol.test if t.role == "id"), None)
    if not protocol.ladder or start is None:
        return []

    def identity(loc: Loc, topo: TopologySpec) -> tuple[str | None, str, str] | None:
        if loc not in sized:  # it has errors of its own, said already
            return None
        params = sized[loc][1]
        dumped = params.model_dump(mode="json") if isinstance(params, BaseModel) else params
        transforms = [t.model_dump(mode="json") for t in topo.transforms]
        return topo.suite, canonical_json(dumped), canonical_json(transforms)

    by_name = {t.name: t for t in protocol.test}
    before_name, before = start, identity(test_locs[start], by_name[start])
    errors: list[tuple[Loc, str]] = []
    for i, step in enumerate(protocol.ladder):
        if step.suite is None:  # named after a test topology: it is that topology
            if step.name not in by_name:
                before = None
                continue
            now = identity(test_locs[step.name], by_name[step.name])
        else:
            now = identity(("ladder", i), step)
        if now is not None and now == before:
            errors.append((("ladder", i), f"step '{step.name}' moves no axis: it is the same topology as "
                           f"'{before_name}' before it (same suite, parameters and transforms)"))
        before_name, before = step.name, now
    return errors


def protocol_hash(protocol: Protocol) -> str:
    """sha256 of the validated protocol (formatting and comments do not count).

    ``base_model`` does not count either: naming the model that ``vs_base`` compares against changes
    no task and no episode, so it is hashed as unset (the hash identifies what is run, not how the
    report labels it).
    """
    dump = protocol.model_dump(mode="json")
    dump["base_model"] = None
    return hashlib.sha256(canonical_json(dump).encode()).hexdigest()


def format_loc(loc: Loc) -> str:
    """('test', 1, 'suite') -> 'test[1].suite'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _message(error: Mapping[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        allowed = _allowed_fields(tuple(error["loc"][:-1]))
        key = str(error["loc"][-1])
        hint = did_you_mean(key, allowed) or (f" (allowed: {', '.join(allowed)})" if allowed else "")
        return f"unknown field{hint}"
    if error["type"] == "missing":
        return "required field is missing"
    msg = error["msg"]
    return msg[len("Value error, ") :] if msg.startswith("Value error, ") else msg


def _allowed_fields(loc: Loc) -> list[str]:
    """Field names of the protocol sub-model at ``loc`` (for 'did you mean')."""
    model: type[BaseModel] | None = Protocol
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field else None
    return sorted(model.model_fields) if model else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found:
                return found
    return None


def _line_of(root: yaml.Node, loc: Loc) -> int:
    """1-based line of the deepest YAML node that ``loc`` reaches."""
    node, line = root, root.start_mark.line + 1
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for key, value in node.value:
                if key.value == part:
                    child, line = value, key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def _duplicate_keys(node: yaml.Node, loc: Loc = (), walked: set[int] | None = None) -> list[tuple[Loc, str]]:
    """PyYAML keeps the last of two equal keys silently; report them instead. A node that aliases
    repeat is walked once (``walked``: ids of the nodes seen), at its first place."""
    walked = set() if walked is None else walked
    if id(node) in walked:
        return []
    walked.add(id(node))
    found: list[tuple[Loc, str]] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.value in seen:
                found.append(((*loc, key.value), f"key '{key.value}' appears twice (line {key.start_mark.line + 1})"))
            seen.add(key.value)
            found += _duplicate_keys(value, (*loc, key.value), walked)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found += _duplicate_keys(item, (*loc, i), walked)
    return found
