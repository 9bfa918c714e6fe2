"""Model backends behind the :class:`topoeval.policies.base.Policy` interface.

Heavy dependencies (litellm, llama-cpp-python, transformers) are imported lazily, inside the
backend that needs them.
"""
