"""``python -m topoeval.models.llamacpp_serve ...``: llama-cpp-python's server with the
``topoeval-tools`` chat format registered (same arguments as ``python -m llama_cpp.server``)."""

from __future__ import annotations

if __name__ == "__main__":
    from llama_cpp.server.__main__ import main

    from topoeval.models.llamacpp_tools import register

    register()
    main()
