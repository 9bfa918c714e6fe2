"""The model a LoRA adapter is trained on: the embedded GGUF (dequantised into torch) or a checkpoint folder.

transformers reads the embedded SmolLM2-135M Q4_1 GGUF (``from_pretrained(dir, gguf_file=...)``,
about 18 s and 1.2 GB on 2 cores); its weights come back dequantised to float32. The model keeps a
note that it came from a GGUF, which makes it unsaveable ("quantized with gguf and is not
serializable"), so that note is cleared. llama.cpp's LoRA converter needs the base model's
``config.json`` only (never its weights): :func:`write_base_config` writes it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError

#: ``base`` value that names the embedded model.
EMBEDDED = "embedded"
INSTALL_HINT = "pip install 'topoeval[train]'  (trl, peft, accelerate, gguf; torch and transformers come with [hf])"


@dataclass
class BaseModel:
    """A loaded base: model, tokenizer, and where they came from."""

    model: Any
    tokenizer: Any
    #: the GGUF file or checkpoint folder
    source: str


def require_training_packages() -> None:
    """One-line error naming the extra when a training package is missing."""
    missing = []
    for name in ("torch", "transformers", "trl", "peft", "accelerate"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise UserError(f"training needs {', '.join(missing)}: {INSTALL_HINT}")


def native_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX tiles), where bf16 autocast pays off.
    Elsewhere torch emulates it: a LoRA-sized matmul and its backward took 797 ms in bf16 against 15 ms
    in float32 on a 2-core AVX2 EPYC (``bench/bf16.py``), an SFT step 97 s against 5.8 s (docs/training.md)."""
    import torch

    from topoeval.models.fingerprint import cpu

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # torch.cpu's own CPUID probes (torch 2.x)
    probed = any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)
    return probed or bool({"avx512_bf16", "amx_bf16"} & set(cpu()["features"]))  # /proc/cpuinfo's flags


def load_base(base: str = EMBEDDED) -> BaseModel:
    """The embedded model (``base="embedded"``) or a transformers checkpoint folder, in float32."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if base == EMBEDDED:
        from topoeval.models.embedded import embedded_gguf

        path = embedded_gguf()
        folder, name = os.path.dirname(path), os.path.basename(path)
        _require_gguf()
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
        _forget_gguf(model)
        return BaseModel(model, tokenizer, path)
    if not (Path(base) / "config.json").is_file():
        raise UserError(f"--base {base}: neither 'embedded' nor a checkpoint folder with config.json")
    return BaseModel(AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base), base)


def load_tokenizer(base: str = EMBEDDED) -> Any:
    """The base's tokenizer alone (seconds; no weights)."""
    from transformers import AutoTokenizer

    if base == EMBEDDED:
        from topoeval.models.embedded import embedded_gguf

        path = embedded_gguf()
        _require_gguf()
        return AutoTokenizer.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path))
    if not (Path(base) / "config.json").is_file():
        raise UserError(f"--base {base}: neither 'embedded' nor a checkpoint folder with config.json")
    return AutoTokenizer.from_pretrained(base)


def _require_gguf() -> None:
    try:
        import gguf  # noqa: F401  (transformers reads GGUF files with it)
    except ImportError:
        raise UserError(f"reading the embedded GGUF needs the gguf package: {INSTALL_HINT}") from None


def _forget_gguf(model: Any) -> None:
    """Drop the GGUF 'quantizer' note so the (already dequantised) model saves like any other."""
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    for attr in ("is_quantized", "_is_quantized_training_enabled"):
        if getattr(model, attr, False) is True:
            try:
                setattr(model, attr, False)
            except AttributeError:
                pass


def write_base_config(model: Any, folder: str | Path) -> Path:
    """``config.json`` of the base (all llama.cpp's LoRA converter reads of it). A config read from a
    GGUF names no ``architectures``, which the converter picks its tensor mapping by: the model's
    class fills it in."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if not getattr(model.config, "architectures", None):
        model.config.architectures = [type(model).__name__]
    model.config.save_pretrained(folder)
    return folder
