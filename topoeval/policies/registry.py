"""Turning a ``--model`` string into a policy."""

from __future__ import annotations

from collections.abc import Callable

from topoeval.errors import UserError
from topoeval.oracle import VARIANTS
from topoeval.policies.base import Policy
from topoeval.policies.reference import NoopPolicy, OraclePolicy, RandomPolicy

#: Reference policies by name. The flawed oracles (``oracle-no-ask``, ...) are oracle variants
#: that each break one decision-quality dimension; the suites implement them.
REFERENCE: dict[str, Callable[[], Policy]] = {
    **{v: (lambda v=v: OraclePolicy(v)) for v in VARIANTS},
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
