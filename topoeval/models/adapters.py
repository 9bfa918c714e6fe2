"""LoRA adapters of the embedded model: ``smollm2-135m-<topology>`` model names.

``topoeval train PROTOCOL`` (``make train PROTOCOL=...``) fine-tunes the embedded SmolLM2-135M on
the protocol's train topology and writes ``adapters/smollm2-135m-<train topology>.gguf`` with its
training record (``.json``: data hash, command, seed, steps, loss curve) beside it. The model
``smollm2-135m-<topology>`` is the embedded GGUF with that adapter, in-process through llama.cpp
(``Llama(model_path=..., lora_path=...)``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.protocol.discovery import REPO_ROOT

BASE_NAME = "smollm2-135m"
#: the adapters folder (``$TOPOEVAL_ADAPTERS`` points elsewhere)
ADAPTERS_DIR = Path(os.environ.get("TOPOEVAL_ADAPTERS") or REPO_ROOT / "adapters")
#: the shipped protocols that train each named adapter (the error for a missing file names the command)
TRAINED_BY = {"wiki": "wiki_to_travel", "travel": "travel_to_wiki"}
_NAME = re.compile(rf"^{re.escape(BASE_NAME)}-([A-Za-z0-9][A-Za-z0-9_.-]*)$")


def adapter_name(topology: str) -> str:
    """The model name of an adapter trained on ``topology``."""
    return f"{BASE_NAME}-{topology}"


def adapter_topology(model: str) -> str | None:
    """``wiki`` for ``smollm2-135m-wiki``; None when ``model`` is not an adapter name."""
    m = _NAME.match(model)
    return m.group(1) if m else None


def adapter_files(model: str, folder: Path | None = None) -> tuple[Path, Path]:
    """(GGUF adapter, training record) paths of an adapter model name."""
    folder = folder or ADAPTERS_DIR
    return folder / f"{model}.gguf", folder / f"{model}.json"


def is_adapter_model(model: str) -> bool:
    """A name this module resolves: a shipped adapter name, or one whose file exists."""
    topo = adapter_topology(model)
    return topo is not None and (topo in TRAINED_BY or adapter_files(model)[0].is_file())


def adapter_path(model: str) -> str:
    """The adapter GGUF of ``model``, or a one-line error naming the command that makes it."""
    path, _ = adapter_files(model)
    if path.is_file():
        return str(path)
    topo = adapter_topology(model)
    protocol = TRAINED_BY.get(topo or "", "PROTOCOL")
    raise UserError(f"the adapter of '{model}' is not in {path.parent}/; train it with: make train PROTOCOL={protocol}"
                    f" (its train topology must be '{topo}')")


def default_models(protocol: str | Path) -> list[str]:
    """What `make eval` runs when no MODEL is given: the embedded base, and beside it the shipped adapter
    trained on the protocol's train topology when there is one (``smollm2-135m-wiki`` for
    ``wiki_to_travel``) — the trained model's in-distribution gain and what is left of it out of
    distribution, side by side with the model it started from."""
    from topoeval.protocol.loader import load_protocol

    train = load_protocol(protocol).train
    trained = adapter_name(train.name) if train is not None else None
    return [BASE_NAME] + ([trained] if trained and adapter_files(trained)[0].is_file() else [])


if __name__ == "__main__":  # make eval: python -m topoeval.models.adapters PROTOCOL -> "smollm2-135m,smollm2-135m-wiki"
    import sys

    print(",".join(default_models(sys.argv[1])))
