"""A Hugging Face checkpoint folder (config.json + safetensors + tokenizer) through transformers.

Optional extra ``topoeval[hf]``. Tools are rendered into the prompt in a prompt tool format
(``hermes`` by default: ``<tool_call>`` blocks parsed from the generated text); generation runs one call at a time in
a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import time

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, Usage
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams
from topoeval.formats import default_format, get_format, resolve_format, suite_format
from topoeval.models.options import ModelOptions

INSTALL_HINT = "pip install 'topoeval[hf]'  (transformers and torch)"


class TransformersPolicy(Policy):
    concurrency = 1

    def __init__(self, folder: str, options: ModelOptions, name: str | None = None):
        self.folder = folder
        self.options = options
        self.name = name or os.path.basename(os.path.normpath(folder))
        #: a prompt format only (``hermes`` by default): the checkpoint's chat template renders plain text turns
        self.format = resolve_format(options.tool_format, options.tool_mode, "prompt")
        if self.format.native:
            raise UserError(f"model '{self.name}': hf: checkpoints take a prompt tool format "
                            "(hermes, search-r1, react, json), not native function calling")
        if self.format.name != default_format("prompt"):
            self.name = f"{self.name}@{self.format.name}"
        self._model = self._tokenizer = None
        self._lock = asyncio.Lock()

    def _load(self):
        if self._model is None:
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
            except ImportError:
                raise UserError(f"this model needs transformers and torch: {INSTALL_HINT}") from None
            if self.options.n_threads:
                torch.set_num_threads(self.options.n_threads)
            self._tokenizer = AutoTokenizer.from_pretrained(self.folder)
            self._model = AutoModelForCausalLM.from_pretrained(self.folder)
            self._model.eval()
        return self._model, self._tokenizer

    def _generate(self, messages, sampling: SamplingParams) -> tuple[str, int, int]:
        import torch

        model, tok = self._load()
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        temperature = sampling.temperature
        kwargs = dict(max_new_tokens=sampling.max_tokens, do_sample=temperature > 0,
                      pad_token_id=tok.pad_token_id or tok.eos_token_id)
        if temperature > 0:
            kwargs.update(temperature=temperature, top_p=sampling.top_p)
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
        with torch.no_grad():
            out = model.generate(**ids, **kwargs)
        prompt_len = ids["input_ids"].shape[1]
        text = tok.decode(out[0][prompt_len:], skip_special_tokens=True)
        return text, prompt_len, int(out.shape[1] - prompt_len)

    async def act(self, messages, tools, sampling: SamplingParams, ctx: EpisodeContext) -> AssistantMessage:
        started = time.perf_counter()
        shifted = suite_format(ctx.suite)
        fmt = self.format if shifted is None or shifted == self.format.name else get_format(shifted)
        if fmt.native:
            raise UserError(f"model '{self.name}': a topology shifts it to native function calling, "
                            "which hf: checkpoints lack")
        fmt.check(tools)
        async with self._lock:
            text, n_in, n_out = await asyncio.to_thread(self._generate, fmt.render(messages, tools), sampling)
        usage = Usage(prompt_tokens=n_in, completion_tokens=n_out)
        reply = fmt.read_reply(AssistantMessage(content=text, usage=usage), tools)
        reply.latency_s = time.perf_counter() - started
        return reply
