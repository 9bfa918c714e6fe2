"""Which protocol a run folder holds, checked against the one the user names: a reader that must rebuild
tasks or worlds (``export --from-run``, ``user-agreement``) uses the user's protocol, loaded from the user's
file with the user's suite folders, and refuses a folder whose run.json records another.

run.json's protocol is only validated as data here (:class:`~topoeval.protocol.schema.Protocol` is plain
pydantic); none of its suites is looked up, imported, or run. A run folder may come from anyone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from topoeval.core.errors import UserError
from topoeval.protocol.loader import protocol_hash
from topoeval.protocol.schema import Protocol
from topoeval.runner.config import RunConfig

#: the run settings that change the protocol as run (:meth:`RunConfig.effective_protocol`), from run.json's config
OVERRIDES = ("shots", "topologies", "max_turns", "max_tokens", "temperature", "top_p")


def recorded_protocol_name(meta: dict[str, Any]) -> str | None:
    """The name of the protocol run.json records (None where it records none readable)."""
    recorded = meta.get("protocol")
    name = recorded.get("name") if isinstance(recorded, dict) else None
    return name if isinstance(name, str) else None


def check_run_protocol(run_dir: Path, meta: dict[str, Any], protocol: Protocol, label: str | None = None) -> Protocol:
    """``protocol`` when run.json (``meta``) records a run of it: the same name and the same content once the
    run's recorded overrides are applied (:data:`OVERRIDES`; compared by
    :func:`~topoeval.protocol.loader.protocol_hash`). Else a one-line UserError naming both protocols.
    ``label``: how the message names the folder (default: its path)."""
    where = label or str(run_dir)
    name = recorded_protocol_name(meta)
    if name != protocol.name:
        held = "no readable protocol" if name is None else f"protocol {name!r}"
        raise UserError(f"{where}: holds a run of {held}, not of protocol {protocol.name!r} "
                        "(give the protocol it was run with)")
    try:
        theirs: str | None = protocol_hash(Protocol.model_validate(meta["protocol"]))
    except ValidationError:
        theirs = None
    mine = as_run(protocol, meta.get("config"))
    if theirs is None or mine is None or protocol_hash(mine) != theirs:
        raise UserError(f"{where}: its run.json records protocol {name!r} with other content than the protocol "
                        f"{protocol.name!r} given here (edited since, or another file of that name); give the "
                        "protocol file it was run with")
    return protocol


def as_run(protocol: Protocol, config: Any) -> Protocol | None:
    """``protocol`` with the overrides of a run's recorded config applied (None when they cannot be)."""
    given = config if isinstance(config, dict) else {}
    try:
        settings = {k: given[k] for k in OVERRIDES if given.get(k) is not None}
        return RunConfig(protocol=protocol, **settings).effective_protocol(protocol)
    except (ValidationError, UserError, TypeError):
        return None
