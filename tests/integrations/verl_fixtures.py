"""Offline pieces for the verl and SkyRL adapter tests: a byte-level tokenizer with a Hermes/Qwen
chat template (built locally with ``tokenizers``, no hub download), exported rows, and scripted
replies — topoeval's oracle and noop rendered in the row's format by a shadow episode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.core.parquet import read_rows
from topoeval.integrations.text_episode import TextEpisode
from topoeval.integrations.trainer_export import export_for_trainer

PROTOCOL = "wiki_to_travel"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# A ChatML template in the Hermes/Qwen2.5 manner: tools in <tools>, calls in <tool_call>, tool results in
# <tool_response> inside a user turn (written for these tests).
NL = "{{ '\\n' }}"  # a newline the template's whitespace control cannot strip
CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system" + NL +
    "{%- if messages[0].role == 'system' %}{{ messages[0].content }}" + NL + NL + "{% endif %}"
    "# Tools" + NL + "<tools>{% for t in tools %}" + NL + "{{ t | tojson }}{% endfor %}" + NL + "</tools>" + NL +
    "Call a tool as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>.<|im_end|>" + NL +
    "{%- elif messages[0].role == 'system' %}<|im_start|>system" + NL + "{{ messages[0].content }}<|im_end|>" + NL +
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' and loop.first %}"
    "{%- elif m.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}<|im_start|>user{% endif %}"
    + NL + "<tool_response>" + NL + "{{ m.content }}" + NL + "</tool_response>"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}<|im_end|>" + NL + "{% endif %}"
    "{%- elif m.role == 'assistant' %}<|im_start|>assistant" + NL + "{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}" + NL + "<tool_call>" + NL + "{\"name\": \"{{ c.function.name }}\", "
    "\"arguments\": {{ c.function.arguments | tojson }}}" + NL + "</tool_call>{% endfor %}<|im_end|>" + NL +
    "{%- else %}<|im_start|>{{ m.role }}" + NL + "{{ m.content }}<|im_end|>" + NL + "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant" + NL + "{% endif %}"
)


def byte_tokenizer():
    """A byte-level BPE tokenizer (one token per byte, ChatML specials) as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIALS)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def export(tmp: Path, target: str, n: int = 2, **kwargs: Any) -> dict[str, list[dict[str, Any]]]:
    """``topoeval export wiki_to_travel --for TARGET`` with n tasks a file: rows by topology."""
    export_for_trainer(PROTOCOL, tmp, target, train_n=n, val_n=n, **kwargs)
    return {"train": read_rows(tmp / "train.parquet"), "wiki": read_rows(tmp / "val_wiki.parquet"),
            "travel": read_rows(tmp / "val_travel.parquet")}


def scripted(extra_info: Any, policy: str = "oracle") -> list[str]:
    """The texts ``policy`` (oracle, a flawed oracle, or noop) writes in the row's format, one per turn,
    from a shadow episode of the same task (the world is deterministic: the same texts replay it)."""
    ep = TextEpisode.from_row(extra_info)
    texts = []
    try:
        while not ep.done:
            if policy == "noop":
                text = ""
            else:
                text = ep.reply_text(ep.topology.suite.oracle(ep.task, list(ep.state.messages), policy))
            texts.append(text)
            ep.step_text(text)
    finally:
        ep.close()
    return texts


def conversation_row(target: str, index: int = 0) -> dict[str, Any]:
    """A row of a multi-turn travel task (the ``split_instructions`` transform: the request comes as three
    dependent user messages), as the export writes it."""
    from topoeval.formats import get_format
    from topoeval.integrations.trainer_export import episode_info, trainer_row
    from topoeval.protocol.schema import Limits
    from topoeval.protocol.topology import topology_from

    topo = topology_from({"name": "travel-conversation", "suite": "travel",
                          "transforms": [{"name": "split_instructions"}]})
    task = topo.tasks("test", 41, index + 1)[index]
    limits = Limits(max_turns=40, max_tool_calls=60, max_turns_per_instruction=20)
    info = episode_info(topo, task, split="test", index=index, limits=limits, fmt=get_format("hermes"))
    return trainer_row(topo, task, info, target)
