"""What a transfer-matrix run records besides its episodes: each topology's axes, each model's own topology.

A matrix protocol (``matrix:``) evaluates every model on every topology; which topology is a model's
own (the diagonal of its row) comes from the model, in this order:

1. ``--trained-on MODEL=TOPOLOGY`` (``RunConfig.train_topologies``), which names a matrix topology;
2. the training record of a LoRA adapter (``adapters/<model>.json``, :mod:`topoeval.models.adapters`):
   its ``train_topology`` when the matrix has a topology of that name, else the matrix topology that
   declares the same suite, parameters and transforms as the record's protocol's train topology;
3. none (a base model, a reference policy, any other model): its row has no diagonal.

run.json's ``matrix`` holds the result (``train_topologies``: per model the topology or null, where
it came from, and why none was found), each topology's axes (:func:`topology_axes`), its measured
``descriptors`` (:mod:`topoeval.runner.descriptors`) and, for a designed matrix, ``design``
(:func:`topoeval.protocol.design.design_record`), so the summary is rebuilt from the run folder alone.
"""

from __future__ import annotations

import json
from typing import Any

from topoeval.core.errors import UserError
from topoeval.formats import suite_format
from topoeval.models.adapters import adapter_files, adapter_topology
from topoeval.protocol.design import design_record
from topoeval.protocol.discovery import did_you_mean, looks_like_path
from topoeval.protocol.schema import AXES as AXES  # the axes a descriptor is compared on (re-exported)
from topoeval.protocol.schema import Protocol, TopologySpec
from topoeval.protocol.topology import ResolvedTopology


def topology_axes(topo: ResolvedTopology) -> dict[str, str]:
    """A topology's value on each axis of :data:`AXES`, from its (transformed) suite's descriptor:
    ``schema`` is the tool vocabulary's label with its distractor count, ``dependency`` carries a
    one-call-per-turn limit (``no_batch``), ``format`` is the format a ``tool_format`` transform
    addresses every model in (``own``: the model's own format)."""
    d = topo.suite.manifest.topology
    return {
        "state": d.state, "reversibility": d.reversibility, "user": d.user, "ordering": d.ordering,
        "dependency": d.dependency + (f", {d.calls_per_turn} call(s) per turn" if d.calls_per_turn else ""),
        "schema": d.schema_name + (f" + {d.distractor_tools} distractors" if d.distractor_tools else ""),
        "answer_channel": d.answer_channel, "instructions": d.instructions,
        "format": suite_format(topo.suite) or "own",
    }


def parse_train_topologies(values: list[str]) -> dict[str, str]:
    """``["MODEL=TOPOLOGY", ...]`` -> {model: topology}; a malformed one is a one-line UserError."""
    out: dict[str, str] = {}
    for value in values:
        model, sep, topology = value.partition("=")
        if not sep or not model.strip() or not topology.strip():
            raise UserError(f"--trained-on {value!r}: give MODEL=TOPOLOGY (or a `topoeval export` folder)")
        out[model.strip()] = topology.strip()
    return out


def _same_spec(a: TopologySpec, b: TopologySpec) -> bool:
    dump = {"suite", "params", "transforms"}
    return a.model_dump(include=dump, mode="json") == b.model_dump(include=dump, mode="json")


def _from_record(model: str, specs: list[TopologySpec]) -> dict[str, Any]:
    """An adapter's train topology among ``specs``, from its training record."""
    if adapter_topology(model) is None:
        return {"topology": None, "source": None, "why": "not an adapter: no training record names its topology "
                "(give --trained-on MODEL=TOPOLOGY)"}
    _, record_path = adapter_files(model)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"topology": None, "source": None, "why": f"no readable training record {record_path.name}"}
    named = record.get("train_topology")
    source = f"training record {record_path.name}"
    by_name = {s.name: s for s in specs}
    if named in by_name:
        return {"topology": named, "source": source}
    named_protocol = record.get("protocol")
    if not isinstance(named_protocol, str) or looks_like_path(named_protocol):
        # only a shipped protocol, by name: a protocol file an adapter's record names is never loaded (loading
        # one imports its suites, and may run what its topologies name; an adapter may come from anyone)
        return {"topology": None, "source": source,
                "why": f"its train topology '{named}' is none of this matrix's, and its protocol is not a shipped "
                       "one (give --trained-on MODEL=TOPOLOGY)"}
    try:  # the record's protocol declares the train topology: the matrix topology declared the same way
        from topoeval.protocol.loader import load_protocol

        train = load_protocol(named_protocol).train_topology()
    except (UserError, KeyError, TypeError):
        train = None
    same = [s.name for s in specs if train is not None and _same_spec(s, train)]
    if same:
        return {"topology": same[0], "source": f"{source} (its protocol's train topology '{named}')"}
    return {"topology": None, "source": source,
            "why": f"its train topology '{named}' (protocol {record.get('protocol')}) is none of this matrix's"}


def train_topologies(protocol: Protocol, models: list[str], given: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per model: ``topology`` (a matrix topology name, or None), ``source`` and, when None, ``why``.
    ``given``: ``--trained-on MODEL=TOPOLOGY``; a model or topology the run does not have is a UserError."""
    specs = protocol.declared_topologies() if protocol.matrix is not None else []
    names = [s.name for s in specs]
    for model, topo in given.items():
        if model not in models:
            raise UserError(f"--trained-on {model}={topo}: '{model}' is not a model of this run"
                            f"{did_you_mean(model, models)}")
        if protocol.matrix is None:
            raise UserError(f"--trained-on {model}={topo}: protocol '{protocol.name}' is not a matrix (its train "
                            f"topology is '{protocol.train_topology().name}')")
        if topo not in names:
            raise UserError(f"--trained-on {model}={topo}: the matrix has no topology '{topo}'"
                            f"{did_you_mean(topo, names)} (it has: {', '.join(names)})")
    out: dict[str, dict[str, Any]] = {}
    for model in models:
        if model in given:
            out[model] = {"topology": given[model], "source": "--trained-on"}
        else:
            out[model] = _from_record(model, specs)
    return out


def matrix_record(protocol: Protocol, topologies: list[ResolvedTopology], models: list[str],
                  given: dict[str, str], before: dict[str, Any] | None = None) -> dict[str, Any]:
    """run.json's ``matrix``: the topologies in order, their axes, and each model's train topology
    (a resumed run keeps the models recorded before; one named again takes what this run says, except
    that a ``--trained-on`` recorded before stands unless this run gives another)."""
    kept = dict((before or {}).get("train_topologies") or {})
    for model, now in train_topologies(protocol, models, given).items():
        if now.get("source") == "--trained-on" or (kept.get(model) or {}).get("source") != "--trained-on":
            kept[model] = now
    out: dict[str, Any] = {
        "topologies": [t.name for t in topologies],
        "axes": {t.name: topology_axes(t) for t in topologies},
        "train_topologies": kept,
    }
    design = design_record(protocol.matrix, [t.name for t in topologies])
    if design:  # a designed matrix: per base, the moves (and their axes) each generated topology applies
        out["design"] = design
    known = (before or {}).get("descriptors") or {}
    if all(t.name in known for t in topologies):  # a resumed run: measured already
        out["descriptors"] = {t.name: known[t.name] for t in topologies}
    else:
        from topoeval.runner.descriptors import measure_all

        out["descriptors"] = measure_all(topologies, protocol.tasks.test.seed, protocol.tasks.test.n, protocol.limits)
    return out
