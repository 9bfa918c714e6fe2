"""Turning a ``--model`` string into a policy.

| form | backend |
|---|---|
| ``oracle``, ``oracle-<flaw>``, ``oracle-quit-early``, ``noop``, ``random``, ``planted-<axis>[+<axis>]`` | reference policies |
| ``smollm2-135m`` | the embedded SmolLM2-135M-Instruct GGUF, in a llama-server process topoeval runs |
| ``smollm2-135m-wiki``, ``smollm2-135m-travel``, ``smollm2-135m-wiki-grpo`` | the embedded model with a LoRA adapter trained on that topology (``-grpo``: then GRPO) (shipped, or in a ``$TOPOEVAL_ADAPTERS`` folder; :mod:`topoeval.models.adapters`), on the same server |
| ``gguf:PATH`` or ``PATH.gguf`` | any GGUF file, in a llama-server process topoeval runs |
| ``hf:PATH`` or a folder with ``config.json`` | a Hugging Face checkpoint through transformers |
| ``direct:NAME`` (with ``--api-base``) | the lean aiohttp path to an OpenAI-compatible server |
| ``provider/model`` | litellm (``openai/gpt-4o-mini``, ``anthropic/...``, ``openai/NAME`` + ``--api-base``) |

Any model form but the reference policies takes a ``@FORMAT`` suffix naming its tool-call format
(``smollm2-135m@json``, ``direct:search-r1-7b@search-r1``; :mod:`topoeval.formats`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from topoeval.core.errors import UserError
from topoeval.core.policy import Policy
from topoeval.formats import split_format
from topoeval.models.adapters import is_adapter_model, known_adapters
from topoeval.models.options import ModelOptions
from topoeval.policies.oracle import VARIANTS
from topoeval.policies.reference import (
    PLANTED,
    PLANTED_PREFIX,
    CollateralPolicy,
    NoopPolicy,
    OraclePolicy,
    PlantedPolicy,
    QuitEarlyPolicy,
    RandomPolicy,
    planted_weaknesses,
)

#: Reference policies by name. The flawed oracles (``oracle-no-ask``, ...) are oracle variants
#: that each break one decision-quality dimension; the suites implement them. ``oracle-quit-early``
#: follows the oracle for about half of its calls and stops without committing.
REFERENCE: dict[str, Callable[[], Policy]] = {
    **{v: functools.partial(OraclePolicy, v) for v in VARIANTS},
    "oracle-quit-early": QuitEarlyPolicy,
    "oracle-collateral": CollateralPolicy,
    "noop": NoopPolicy,
    "random": RandomPolicy,
}
#: The oracle with weaknesses planted on known axes (``planted-format``, ``planted-format+merged``: any combination
#: of :data:`~topoeval.policies.reference.PLANTED`), the known answer of a designed matrix's attribution. Reference
#: policies too (no model, no format), kept out of :data:`REFERENCE` so that the runs of every reference policy
#: (the leaderboard's) do not grow by them.
PLANTED_FORMS = f"{PLANTED_PREFIX}<weakness>[+<weakness>...] ({', '.join(PLANTED)})"
EMBEDDED = "smollm2-135m"
#: the model forms that take a name or path of the user's (``topoeval models`` lists them)
FORMS = {
    "provider/model": "litellm (openai/gpt-4o-mini, anthropic/..., openai/NAME with --api-base)",
    "direct:NAME": "the lean path to an OpenAI-compatible server (vLLM, llama.cpp) given by --api-base",
    "gguf:PATH": "any GGUF file, in a llama-server process topoeval runs",
    "hf:PATH": "a Hugging Face checkpoint folder, through transformers",
}


def known_models() -> list[str]:
    """The reference policies' names."""
    return sorted(REFERENCE)


def runnable_names() -> list[str]:
    """Every model name topoeval runs as it is: the reference policies, the embedded base and every
    shipped or registered adapter (``$TOPOEVAL_ADAPTERS``)."""
    return [*known_models(), EMBEDDED, *known_adapters()]


def unknown_model(spec: str) -> str:
    """The one-line message for a model string no form matches: every name, then the forms."""
    return (f"unknown model '{spec}'; known: {', '.join(known_models())} (reference policies), {EMBEDDED} (embedded "
            f"base), {', '.join(known_adapters()) or 'no adapter found'} (its adapters), or {', '.join(FORMS)} "
            "(`topoeval models` lists them all, with the tool-call formats)")


def is_reference(spec: str | Policy) -> bool:
    return isinstance(spec, str) and (spec in REFERENCE or planted_weaknesses(spec) is not None)


def ignored_format(models: list[str | Policy], tool_format: str | None) -> str | None:
    """A one-line warning when a tool-call format was asked for reference policies only (they act on
    the world directly, so no format applies; a warning, not an error, because the same command may
    be meant for a real model added later): ``oracle@json``, or ``--tool-format`` with no model but
    reference policies. None when every format asked for reaches a model."""
    names = [m for m in models if isinstance(m, str)]
    suffixed = [m for m in names if split_format(m)[1] is not None and split_format(m)[0] in REFERENCE]
    if suffixed:
        return (f"{', '.join(suffixed)}: reference policies act on the world directly, no tool-call format applies; "
                "the @FORMAT is ignored")
    if tool_format and names and len(names) == len(models) and all(split_format(m)[0] in REFERENCE for m in names):
        return (f"--tool-format {tool_format} is ignored: every model here is a reference policy "
                f"({', '.join(names)}), and they act on the world directly, not through a format")
    return None


def make_policy(spec: str | Policy, options: ModelOptions | None = None) -> Policy:
    """A policy from a model string (see the module docstring), or the policy itself."""
    if isinstance(spec, Policy):
        return spec
    options = options or ModelOptions()
    spec, tool_format = split_format(spec)
    if spec in REFERENCE:  # reference policies act on the world directly: no format applies
        return REFERENCE[spec]()
    planted = planted_weaknesses(spec)
    if planted is not None:  # planted-a+b: the oracle with several planted weaknesses
        return PlantedPolicy(planted)
    if tool_format is not None:  # MODEL@FORMAT: this model's format (overrides --tool-format)
        options = options.model_copy(update={"tool_format": tool_format, "tool_mode": "auto"})
    if spec == EMBEDDED or is_adapter_model(spec):
        from topoeval.models.adapters import adapter_path
        from topoeval.models.embedded import embedded_gguf
        from topoeval.models.llama_server_policy import LlamaServerPolicy

        lora = adapter_path(spec) if spec != EMBEDDED else None
        return LlamaServerPolicy(embedded_gguf(), options, name=spec, lora_path=lora)
    if spec.startswith("gguf:") or spec.endswith(".gguf"):
        from topoeval.models.llama_server_policy import LlamaServerPolicy

        return LlamaServerPolicy(_existing(spec.removeprefix("gguf:")), options, name=spec)
    if spec.startswith("hf:") or (Path(spec) / "config.json").is_file():
        from topoeval.models.transformers_backend import TransformersPolicy

        return TransformersPolicy(_existing(spec.removeprefix("hf:")), options, name=spec)
    if spec.startswith("direct:"):
        from topoeval.models.direct import DirectPolicy

        return DirectPolicy(spec.removeprefix("direct:"), options)
    if "/" in spec:
        from topoeval.models.litellm_backend import LiteLLMPolicy

        return LiteLLMPolicy(spec, options)
    raise UserError(unknown_model(spec))


def _existing(path: str) -> str:
    if not Path(path).exists():
        raise UserError(f"model path '{path}' does not exist")
    return path
