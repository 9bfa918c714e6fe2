"""Turning a ``--model`` string into a policy."""

from __future__ import annotations

from collections.abc import Callable

from topoeval.errors import UserError
from topoeval.policies.base import Policy
from topoeval.policies.reference import NoopPolicy, OraclePolicy, RandomPolicy

#: Reference policies by name. Flawed oracles are oracle variants the suites implement.
REFERENCE: dict[str, Callable[[], Policy]] = {
    "oracle": lambda: OraclePolicy("oracle"),
    "noop": NoopPolicy,
    "random": RandomPolicy,
}


def known_models() -> list[str]:
    return sorted(REFERENCE)


def make_policy(spec: str | Policy) -> Policy:
    """A policy from a model name, or the policy itself."""
    if isinstance(spec, Policy):
        return spec
    if spec in REFERENCE:
        return REFERENCE[spec]()
    raise UserError(f"unknown model '{spec}'; known: {', '.join(known_models())}")
