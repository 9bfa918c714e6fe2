"""``native``: the backend's own function calling (tools sent as ``tools``, calls returned structured).

For an OpenAI-compatible server or a hosted API that is the provider's function calling; for the
local GGUF models topoeval serves, it is the grammar-constrained ``message:`` / ``functions.<name>:``
layout of :mod:`topoeval.models.llamacpp_tools` (the layout the shipped adapters were trained on).
"""

from __future__ import annotations

from topoeval.formats.base import ToolFormat


class NativeFormat(ToolFormat):
    name = "native"
    description = "the backend's function calling (tools sent as tools; local GGUF models: grammar-constrained calls)"
    native = True
