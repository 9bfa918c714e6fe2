"""Does bf16 autocast pay on this CPU? One LoRA-sized matmul and its backward, float32 vs bf16.

    .venv/bin/python bench/bf16.py            (needs the 'train' extra: torch)

``topoeval train``'s SFT recipe autocasts to bf16 only where :func:`topoeval.training.base_model.native_bf16`
finds native bf16 (AVX512-BF16 or AMX): elsewhere torch emulates it. Prints the milliseconds of each and the
ratio bf16 / float32 (the reference), and what the recipe would choose here.
"""

from __future__ import annotations

import argparse
import time


def step_ms(x, w, bf16: bool, rounds: int) -> float:
    import torch

    start = time.perf_counter()
    for _ in range(rounds):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            (x @ w).sum().backward()
    return (time.perf_counter() - start) / rounds * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    import torch

    from topoeval.training.base_model import native_bf16

    torch.manual_seed(0)
    x = torch.randn(512, 576)  # 512 tokens of SmolLM2-135M's hidden size into its MLP width
    w = torch.randn(576, 1536, requires_grad=True)
    step_ms(x, w, False, 2)  # warm-up
    fp32 = step_ms(x, w, False, a.rounds)
    bf16 = step_ms(x, w, True, a.rounds)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}")
    print(f"  float32 : {fp32:8.1f} ms (reference)")
    print(f"  bf16    : {bf16:8.1f} ms  x{bf16 / fp32:.2f}")
    print(f"native bf16 here: {native_bf16()} -> the SFT recipe trains in {'bf16' if native_bf16() else 'float32'}")


if __name__ == "__main__":
    main()
