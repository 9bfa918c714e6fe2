"""The shipped LoRA adapters of the embedded model, installed as the package ``topoeval_adapters``.

``smollm2-135m-<topology>.gguf`` with its training record ``smollm2-135m-<topology>.json`` beside
it; the record's ``adapter_gguf.sha256`` is checked before the adapter is used
(:mod:`topoeval.models.adapters`). Nothing is importable from it.
"""
