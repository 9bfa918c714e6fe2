"""A llama.cpp GGUF LoRA adapter read back into a PEFT model (GRPO's ``--init sft``).

The shipped adapters are GGUF files only (what llama-server loads); RL continues from one by
copying its tensors into a freshly wrapped PEFT LoRA of the same rank. llama.cpp stores
``blk.<i>.<tensor>.weight.lora_a`` as (r, in) and ``lora_b`` as (out, r) — PEFT's shapes — except
that the HF-to-GGUF conversion of a Llama permutes the rows of ``attn_q`` and ``attn_k`` for its
rotary layout, and the LoRA converter does the same to their ``lora_b``: that permutation is
undone here. ``tests/training/test_grpo.py`` checks the round trip against llama.cpp's own
reading of the file (:func:`topoeval.training.lora_gguf.gguf_agreement`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError

#: GGUF tensor name -> the module path inside a Llama decoder layer
_MODULES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def gguf_lora(path: str | Path) -> tuple[dict[str, Any], float, int]:
    """The adapter's tensors (GGUF name -> float32 numpy array), its alpha and its rank."""
    import numpy as np
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable GGUF file ({exc})") from None
    field = reader.fields.get("adapter.lora.alpha")
    if field is None or reader.fields.get("adapter.type") is None:
        raise UserError(f"{path}: not a GGUF LoRA adapter (no adapter.lora.alpha)")
    alpha = float(field.contents())
    tensors = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors}
    rank = next(v.shape[0] for k, v in tensors.items() if k.endswith(".lora_a"))
    return tensors, alpha, rank


def _unpermute(w: Any, n_head: int) -> Any:
    """Inverse of convert_hf_to_gguf's ``LlamaModel.permute`` on the rows of ``w``."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_into_peft(peft_model: Any, path: str | Path) -> int:
    """Copy a GGUF LoRA's weights into ``peft_model`` (its LoRA rank must match); the tensors loaded."""
    import torch

    tensors, _, rank = gguf_lora(path)
    cfg = peft_model.base_model.model.config
    heads = {"attn_q": cfg.num_attention_heads, "attn_k": getattr(cfg, "num_key_value_heads", cfg.num_attention_heads)}
    params = dict(peft_model.named_parameters())
    loaded = 0
    for name, value in tensors.items():
        blk, layer, kind, _, part = name.split(".")  # blk.<i>.<kind>.weight.lora_a|lora_b
        if blk != "blk" or kind not in _MODULES:
            raise UserError(f"{path}: unexpected tensor {name} (a Llama-style adapter was expected)")
        if part == "lora_b" and kind in heads:
            value = _unpermute(value, heads[kind])
        key = f"base_model.model.model.layers.{layer}.{_MODULES[kind]}.lora_{part[-1].upper()}.default.weight"
        if key not in params:
            raise UserError(f"{path}: {name} has no place in the model (LoRA on {kind} missing?)")
        if tuple(params[key].shape) != value.shape:
            raise UserError(f"{path}: {name} is {value.shape}, the model's LoRA {tuple(params[key].shape)} "
                            f"(the adapter's rank is {rank})")
        with torch.no_grad():
            params[key].copy_(torch.from_numpy(value))
        loaded += 1
    return loaded
