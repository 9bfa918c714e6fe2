"""What a local model's decoding ran on, for run.json: greedy decoding is bit-identical only on the
same llama.cpp build, the same CPU features and the same batching settings (docs/models.md)."""

from __future__ import annotations

import platform
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The CPU features that select llama.cpp's kernels (and so can change a greedy decode).
KERNEL_FEATURES = ("sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
                   "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16", "asimd", "sve", "i8mm")


@lru_cache(maxsize=1)
def cpu() -> dict[str, Any]:
    """This machine's CPU: model name and the kernel-relevant feature flags it has."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name":
                model = value.strip()
            elif key in ("flags", "Features"):
                flags = set(value.split())
                break
    except OSError:
        pass
    return {"machine": platform.machine(), "model": model, "features": [f for f in KERNEL_FEATURES if f in flags]}


def inference_fingerprint(binary: Path, slots: int, n_ctx: int, n_threads: int | None,
                          prefix_states: bool = False) -> dict[str, Any]:
    from topoeval.models.llamacpp_build import build_record

    build = build_record(binary)
    return {
        "backend": "llama-server",
        "build": {k: build[k]
                  for k in ("llama_cpp_python", "ggml_version", "ggml_commit", "cmake_flags", "compiler", "source")
                  if k in build},
        "batching": {"slots": slots, "n_ctx_per_slot": n_ctx, "continuous_batching": True,
                     "cache_prompt": ("a saved state of the prefix shared with the cell, then within an episode"
                                      if prefix_states else "within an episode"),
                     "server_prompt_cache": False},
        "n_threads": n_threads,
        "cpu": cpu(),
    }
