"""topoeval's verifiers 0.4 taskset under a plugin id verifiers can load.

verifiers resolves a taskset or harness id to a top-level module (``vf-eval topoeval-verifiers``
imports ``topoeval_verifiers``; a dotted id such as ``topoeval.integrations.verifiers`` does not
resolve), so this package re-exports :mod:`topoeval.integrations.verifiers`, where everything lives.
"""

from topoeval.integrations.verifiers import *  # noqa: F403
from topoeval.integrations.verifiers import __all__  # noqa: F401
