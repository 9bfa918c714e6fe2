"""The ``topoeval-tools`` prompt as a Jinja chat template, for training the embedded model.

:func:`chat_template` renders an OpenAI-format conversation (``tools``, ``tool_calls`` with
``arguments`` as JSON strings, ``tool`` messages) into exactly the text the in-process llama.cpp
backend sends at inference: :func:`topoeval.models.llamacpp_format.for_chatml_function_calling`
followed by :func:`topoeval.models.llamacpp_tools.render_prompt`. It is assembled from the same
constants, and ``tests/models/test_llamacpp_template.py`` checks the two agree on the oracle's
conversations of every shipped suite. Each assistant turn's text and its ``<|im_end|>`` sit inside
``{% generation %}`` markers, so ``apply_chat_template(..., return_assistant_tokens_mask=True)``
(and TRL's assistant-only loss) labels exactly what the model writes at inference.
"""

from __future__ import annotations

import json

from topoeval.models.llamacpp_format import DEFAULT_SYSTEM, RESULT_SEPARATOR
from topoeval.models.llamacpp_tools import (
    CALL_PREFIX,
    CALL_SEPARATOR,
    END,
    MESSAGE_PREFIX,
    RESULT_FORMAT,
    START,
    TOOLS_FOOTER,
    TOOLS_HEADER,
    UNNAMED_TOOL,
)


def _lit(text: str) -> str:
    """A Jinja string literal (Jinja reads JSON's escapes)."""
    return json.dumps(text)


def _out(text: str) -> str:
    return "{{ " + _lit(text) + " }}"


def chat_template() -> str:
    """The Jinja template (see the module docstring); it takes ``messages``, ``tools`` and ``add_generation_prompt``."""
    tools_text = (
        "{%- set ns = namespace(tools='') -%}"
        "{%- if tools -%}"
        "{%- set ns.tools = " + _lit(TOOLS_HEADER) + " -%}"
        "{%- for t in tools -%}"
        "{%- set fn = t.function if t.function is defined else t -%}"
        "{%- set ns.tools = ns.tools ~ " + _lit("\n" + CALL_PREFIX) + " ~ fn.name ~ ': ' ~ (fn.description or '')"
        " ~ '\\n' ~ ((fn.parameters or {}) | tojson(ensure_ascii=true)) -%}"
        "{%- endfor -%}"
        "{%- set ns.tools = ns.tools ~ '\\n' ~ " + _lit(TOOLS_FOOTER) + " -%}"
        "{%- endif -%}"
    )
    system_tail = "{%- if tools -%}{{ '\\n\\n' ~ ns.tools }}{%- endif -%}" + _out(END + "\n")
    arguments = ("{%- set a = c.function.arguments -%}"
                 "{%- if a is string -%}{{ a }}{%- else -%}{{ (a if a is not none else {}) | tojson }}{%- endif -%}")
    assistant = (
        _out(START + "assistant\n") + "{%- generation -%}"
        "{%- if tools -%}"
        "{%- if m.tool_calls -%}"
        "{%- if content -%}" + _out(MESSAGE_PREFIX) + "{{ content }}" + _out(CALL_SEPARATOR) + "{%- endif -%}"
        "{%- for c in m.tool_calls -%}"
        "{%- if not loop.first -%}" + _out(CALL_SEPARATOR) + "{%- endif -%}"
        + _out(CALL_PREFIX) + "{{ c.function.name }}" + _out(":\n") + arguments +
        "{%- endfor -%}"
        "{%- else -%}" + _out(MESSAGE_PREFIX) + "{{ content }}{%- endif -%}"
        "{%- else -%}{{ content }}{%- endif -%}"
        + _out(END) + "{%- endgeneration -%}" + _out("\n")
    )
    result_head, rest = RESULT_FORMAT.split("{name}")
    result_mid = rest.split("{content}")[0]
    tool = (
        "{%- if loop.first or loop.previtem.role != 'tool' -%}" + _out(START + "user\n")
        + "{%- else -%}" + _out(RESULT_SEPARATOR) + "{%- endif -%}"
        "{{ " + _lit(result_head) + " ~ (m.name or " + _lit(UNNAMED_TOOL) + ") ~ " + _lit(result_mid) + " ~ content }}"
        "{%- if loop.last or loop.nextitem.role != 'tool' -%}" + _out(END + "\n") + "{%- endif -%}"
    )
    return (
        tools_text
        + "{%- if not messages or messages[0].role != 'system' -%}"
        + _out(START + "system\n" + DEFAULT_SYSTEM) + system_tail + "{%- endif -%}"
        "{%- for m in messages -%}"
        "{%- set content = m.content if m.content is string else '' -%}"
        "{%- if m.role == 'system' -%}" + _out(START + "system\n") + "{{ content }}" + system_tail
        + "{%- elif m.role == 'assistant' -%}" + assistant
        + "{%- elif m.role == 'tool' -%}" + tool
        + "{%- else -%}" + _out(START) + "{{ m.role }}" + _out("\n") + "{{ content }}" + _out(END + "\n")
        + "{%- endif -%}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}" + _out(START + "assistant\n") + "{%- endif -%}"
    )


def inference_text(messages: list[dict], tools: list[dict]) -> str:
    """What the in-process backend sends for ``messages`` (its prompt for the next assistant turn)."""
    from topoeval.models.llamacpp_format import for_chatml_function_calling
    from topoeval.models.llamacpp_tools import render_prompt

    return render_prompt(for_chatml_function_calling(messages), tools)
