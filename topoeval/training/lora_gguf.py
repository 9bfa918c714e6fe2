"""A PEFT LoRA adapter as a GGUF file llama.cpp loads (``Llama(..., lora_path=...)``).

The conversion is llama.cpp's own ``convert_lora_to_gguf.py`` (with its ``conversion/`` package and ``gguf-py``).
llama-cpp-python's wheel does not carry it, its source distribution does (under ``vendor/llama.cpp/``), so
:func:`converter_dir` fetches the sdist of the pinned llama-cpp-python version (the source of topoeval's llama-server
build) once with pip (``pip download --no-deps --no-binary llama-cpp-python``) and keeps just those files in the cache
(``$TOPOEVAL_CACHE``, else ``$XDG_CACHE_HOME/topoeval``, else ``~/.cache/topoeval``; about 2 MB). ``make install``
does this, so a clean clone's tests and ``make train`` have it; afterwards nothing needs the network.

``python -m topoeval.training.lora_gguf --fetch`` fetches it (and prints where it is).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.models.llamacpp_build import cache_root, fetch_sdist

SCRIPT = "convert_lora_to_gguf.py"
#: what the converter needs from the sdist's vendor/llama.cpp/
CONVERTER_PARTS = (SCRIPT, "convert_hf_to_gguf.py", "conversion/", "gguf-py/")


def llama_cpp_version() -> str:
    """The llama.cpp source everything local is built from (:data:`topoeval.models.llamacpp_build.LLAMA_CPP_PYTHON`)."""
    from topoeval.models.llamacpp_build import LLAMA_CPP_PYTHON

    return LLAMA_CPP_PYTHON


def converter_dir(fetch: bool = True) -> Path:
    """The folder holding ``convert_lora_to_gguf.py`` for the installed llama-cpp-python (fetched once)."""
    ver = llama_cpp_version()
    folder = cache_root() / f"llama.cpp-{ver}"
    if (folder / SCRIPT).is_file():
        return folder
    if not fetch:
        raise UserError(f"llama.cpp's LoRA converter is not in {folder}; fetch it once (needs PyPI): "
                        f"{sys.executable} -m topoeval.training.lora_gguf --fetch  (make install does this)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        sdist = fetch_sdist("for its GGUF converter")
        staging = Path(tmp) / "llama.cpp"
        _extract_converter(sdist, staging)
        if folder.exists():  # another process won the race
            return folder
        staging.rename(folder)
    return folder


def _extract_converter(sdist: Path, dest: Path) -> None:
    with tarfile.open(sdist) as tar:
        members = []
        for m in tar.getmembers():
            parts = m.name.split("/", 3)  # llama_cpp_python-X/vendor/llama.cpp/<rest>
            if len(parts) == 4 and parts[1:3] == ["vendor", "llama.cpp"] and (m.isfile() or m.isdir()):
                rest = parts[3]
                if any(rest == p or (p.endswith("/") and rest.startswith(p)) for p in CONVERTER_PARTS):
                    m.name = rest
                    members.append(m)
        if not any(m.name == SCRIPT for m in members):
            raise UserError(f"{sdist.name} has no vendor/llama.cpp/{SCRIPT}")
        tar.extractall(dest, members=members, filter="data")


def convert_adapter(adapter_dir: str | Path, base_config_dir: str | Path, out_file: str | Path,
                    outtype: str = "f16") -> Path:
    """Convert a PEFT adapter folder to one GGUF file; ``base_config_dir`` holds the base's config.json."""
    script = converter_dir() / SCRIPT
    out_file = Path(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # the base config is local: never ask the Hub
    proc = subprocess.run(
        [sys.executable, str(script), "--base", str(base_config_dir), "--outtype", outtype, "--outfile", str(out_file),
         str(adapter_dir)],
        capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not out_file.is_file():
        lines = [ln for ln in (proc.stderr + proc.stdout).strip().splitlines() if ln.strip()]
        raise UserError(f"convert_lora_to_gguf.py failed: {lines[-1] if lines else f'exit {proc.returncode}'}")
    return out_file


def gguf_agreement(peft_model, input_ids: list[int], base_gguf: str, lora_gguf: str | Path,
                   max_tokens: int = 512) -> dict | None:
    """Whether the GGUF adapter does in llama.cpp what the PEFT adapter does in transformers.

    On one conversation, each next token's log-probability changes by some amount when the adapter
    is applied; this is the correlation between that change under transformers (the trained
    adapter, float32 base) and under llama.cpp (the converted adapter on the quantised base). A
    conversion that mapped tensors wrongly gives a correlation near 0. None without llama-cpp-python.
    """
    from topoeval.models.llamacpp_build import import_llama_cpp

    try:
        llama_cpp = import_llama_cpp()
    except UserError:
        return None
    import numpy as np
    import torch

    ids = list(input_ids)[:max_tokens]
    target = torch.tensor(ids[1:])[:, None]

    def logprobs(logits) -> np.ndarray:
        lp = torch.log_softmax(torch.as_tensor(np.asarray(logits, dtype=np.float32)), -1)
        return lp[:-1].gather(1, target)[:, 0].numpy()

    was_training = peft_model.training
    peft_model.eval()
    with torch.no_grad():
        x = torch.tensor([ids])
        hf_lora = logprobs(peft_model(input_ids=x).logits[0].float())
        with peft_model.disable_adapter():
            hf_base = logprobs(peft_model(input_ids=x).logits[0].float())
    peft_model.train(was_training)
    cpp = {}
    for key, lora in (("base", None), ("lora", str(lora_gguf))):
        llama = llama_cpp.Llama(model_path=base_gguf, lora_path=lora, n_ctx=max(len(ids), 64), logits_all=True,
                                verbose=False)
        try:
            llama.eval(ids)
            cpp[key] = logprobs(llama.scores[:len(ids)])
        finally:
            llama.close()
    d_hf, d_cpp = hf_lora - hf_base, cpp["lora"] - cpp["base"]
    return {"tokens": len(ids), "correlation": round(float(np.corrcoef(d_hf, d_cpp)[0, 1]), 4),
            "mean_abs_change_transformers": round(float(np.abs(d_hf).mean()), 4),
            "mean_abs_change_llama_cpp": round(float(np.abs(d_cpp).mean()), 4)}


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(
        description="llama.cpp's LoRA-to-GGUF converter for the installed llama-cpp-python")
    parser.add_argument("--fetch", action="store_true", help="download it now if it is not cached")
    args = parser.parse_args(argv)
    try:
        print(converter_dir(fetch=args.fetch))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
