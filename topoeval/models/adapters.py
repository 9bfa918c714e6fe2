"""LoRA adapters of the embedded model: ``smollm2-135m-<topology>`` model names.

The model ``smollm2-135m-<topology>`` is the embedded GGUF with the LoRA adapter
``smollm2-135m-<topology>.gguf``, served by the same llama-server as the base. Every adapter comes
with its training record ``smollm2-135m-<topology>.json`` beside it (data hash, command, seed, steps,
loss curve, and ``adapter_gguf.sha256``), and is checked against that sha256 before it is used: a
missing record or a file that does not match is a one-line error naming what reinstalls or remakes it.

Where adapters are found, first match wins:

1. the folders of ``$TOPOEVAL_ADAPTERS`` (``os.pathsep``-separated), e.g. ``runs/adapters``, where
   ``topoeval train`` writes by default — the shipped adapters stay usable beside them;
2. the shipped adapters: the package ``topoeval_adapters``, the repository's ``adapters/`` folder
   mapped into the distribution (read with :mod:`importlib.resources`, so a wheel and an editable
   install behave the same). ``make train`` in a checkout writes there (``--out-dir adapters``): that
   is how the shipped adapters are remade.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from importlib.resources import files
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.core.provenance import source_checkout
from topoeval.models.llamacpp_tools import PROMPT_FORMAT

BASE_NAME = "smollm2-135m"
#: folders searched before the shipped adapters (``os.pathsep``-separated)
ENV = "TOPOEVAL_ADAPTERS"
#: the package the shipped adapters are installed as (the repository's adapters/ folder)
SHIPPED_PACKAGE = "topoeval_adapters"
#: the shipped protocols that train each shipped adapter (the error for a missing file names the command)
TRAINED_BY = {"wiki": "wiki_to_travel", "travel": "travel_to_wiki"}
#: the name's ending of an adapter trained with GRPO (``smollm2-135m-wiki-grpo``: GRPO on wiki)
GRPO_SUFFIX = "-grpo"
_NAME = re.compile(rf"^{re.escape(BASE_NAME)}-([A-Za-z0-9][A-Za-z0-9_.-]*)$")
#: sha256 of adapter files already checked, by (path, size, mtime): each file is hashed once per process
_CHECKED: dict[tuple[str, int, int], str] = {}


def adapter_name(topology: str) -> str:
    """The model name of an adapter trained on ``topology``."""
    return f"{BASE_NAME}-{topology}"


def grpo_adapter_name(topology: str) -> str:
    """The model name of a GRPO adapter trained on ``topology``."""
    return adapter_name(topology) + GRPO_SUFFIX


def _trained_on(model: str) -> tuple[str, str]:
    """(train topology, ``topoeval train`` method flag) an adapter name says: ``smollm2-135m-wiki-grpo``
    is ('wiki', ' --method grpo'); '' for a name that is no adapter's."""
    name = adapter_topology(model) or ""
    if name.endswith(GRPO_SUFFIX):
        return name.removesuffix(GRPO_SUFFIX), " --method grpo"
    return name, ""


def adapter_topology(model: str) -> str | None:
    """``wiki`` for ``smollm2-135m-wiki``; None when ``model`` is not an adapter name."""
    m = _NAME.match(model)
    return m.group(1) if m else None


def _shipped_dir() -> Path:
    try:
        return Path(str(files(SHIPPED_PACKAGE)))  # a real folder: topoeval is not zip-safe
    except ModuleNotFoundError:  # an install from before the adapters were packaged: nothing shipped
        return Path(SHIPPED_PACKAGE)


#: the installed folder of the shipped adapters (the repository's adapters/ in an editable install)
ADAPTERS_DIR = _shipped_dir()


def adapter_dirs() -> list[Path]:
    """The folders searched for adapters, in order: ``$TOPOEVAL_ADAPTERS``'s (read now), then the shipped one."""
    extra = [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    return [*extra, ADAPTERS_DIR]


def known_adapters() -> list[str]:
    """Every adapter model name topoeval can run now: the shipped ones and each ``smollm2-135m-*.gguf``
    in a ``$TOPOEVAL_ADAPTERS`` folder (read now), sorted."""
    names = {p.stem for d in adapter_dirs() if d.is_dir() for p in d.glob(f"{BASE_NAME}-*.gguf")}
    return sorted(n for n in names if adapter_topology(n) is not None)


def adapter_files(model: str, folder: Path | None = None) -> tuple[Path, Path]:
    """(GGUF adapter, training record) paths of an adapter model name: in ``folder``, or in the first
    searched folder that holds the GGUF (the shipped folder when none does)."""
    if folder is None:
        dirs = adapter_dirs()
        folder = next((d for d in dirs if (d / f"{model}.gguf").is_file()), dirs[-1])
    return folder / f"{model}.gguf", folder / f"{model}.json"


def is_adapter_model(model: str) -> bool:
    """A name this module resolves: a shipped adapter name, or one whose file exists."""
    return adapter_topology(model) is not None and (_trained_on(model)[0] in TRAINED_BY
                                                    or adapter_files(model)[0].is_file())


def adapter_path(model: str) -> str:
    """The adapter GGUF of ``model``, checked against the sha256 its training record gives, or a
    one-line error naming the command that installs or makes it."""
    path, record = adapter_files(model)
    if not path.is_file():
        raise UserError(f"the adapter of '{model}' is in none of {', '.join(f'{d}/' for d in adapter_dirs())}; "
                        f"{_remedy(model, path)}")
    expected = _recorded_sha256(model, record, path)
    got = file_sha256(path)
    if got != expected:
        raise UserError(f"{path} does not match its training record (sha256 {got[:12]}, recorded {expected[:12]}); "
                        f"{_remedy(model, path)}")
    return str(path)


def prompt_format(lora_path: str | Path) -> str:
    """The prompt layout an adapter was trained on: its training record's ``data.prompt_format`` (a record
    from before it was kept, or no record beside the file: the plain ``topoeval-tools`` layout)."""
    record = Path(lora_path).with_suffix(".json")
    try:
        fmt = json.loads(record.read_text(encoding="utf-8"))["data"].get("prompt_format")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        fmt = None
    return fmt if isinstance(fmt, str) else PROMPT_FORMAT


def file_sha256(path: Path) -> str:
    """sha256 of a file, computed once per process for an unchanged file."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _CHECKED:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _CHECKED[key] = h.hexdigest()
    return _CHECKED[key]


def _recorded_sha256(model: str, record: Path, path: Path) -> str:
    try:
        sha = json.loads(record.read_text(encoding="utf-8"))["adapter_gguf"]["sha256"]
    except FileNotFoundError:
        raise UserError(f"{path} has no training record {record.name} beside it (its sha256 is checked before use); "
                        f"{_remedy(model, path)}") from None
    except (OSError, ValueError, KeyError, TypeError):
        raise UserError(f"{record}: no adapter_gguf.sha256 in this training record; {_remedy(model, path)}") from None
    if not (isinstance(sha, str) and len(sha) == 64):
        raise UserError(f"{record}: adapter_gguf.sha256 is not a sha256; {_remedy(model, path)}")
    return sha


def _remedy(model: str, path: Path) -> str:
    """What puts a good copy of ``model``'s adapter in place: reinstalling for a shipped adapter in the
    shipped folder, training for any other."""
    topo, method = _trained_on(model)
    protocol = TRAINED_BY.get(topo)
    if protocol is not None and path.parent == ADAPTERS_DIR:
        checkout = source_checkout()
        if checkout is not None:
            return f"restore it: git -C {checkout} restore adapters/{model}.gguf adapters/{model}.json"
        return "reinstall it: pip install --force-reinstall --no-deps topoeval"
    return (f"train it with: topoeval train {protocol or 'PROTOCOL'}{method} (its train topology must be '{topo}'), "
            f"and name its folder in ${ENV} (topoeval train writes runs/adapters/)")


def default_models(protocol: str | Path) -> list[str]:
    """What `make eval` runs when no MODEL is given: the embedded base, and beside it the shipped adapter
    trained on the protocol's train topology when there is one (``smollm2-135m-wiki`` for
    ``wiki_to_travel``) — the trained model's in-distribution gain and what is left of it out of
    distribution, side by side with the model it started from."""
    from topoeval.protocol.loader import load_protocol

    proto = load_protocol(protocol)
    names = [proto.train.name] if proto.train is not None else [t.name for t in proto.declared_topologies()]
    trained = [adapter_name(n) for n in names]  # a matrix: the adapter trained on each of its topologies
    return [BASE_NAME] + [t for t in trained if adapter_files(t)[0].is_file()]


if __name__ == "__main__":  # make eval: python -m topoeval.models.adapters PROTOCOL -> "smollm2-135m,smollm2-135m-wiki"
    import sys

    print(",".join(default_models(sys.argv[1])))
