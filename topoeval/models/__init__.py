"""Model backends behind the :class:`topoeval.core.policy.Policy` interface.

Heavy dependencies (litellm, llama-cpp-python, transformers) are imported lazily, inside the
backend that needs them.
"""
