"""A Hugging Face checkpoint folder (config.json + safetensors + tokenizer) through transformers.

Optional extra ``topoeval[hf]``. Tools are rendered into the prompt (prompt tool mode) and
``<tool_call>`` blocks are parsed from the generated text; generation runs one call at a time in
a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import time

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage, Usage
from topoeval.models.options import ModelOptions
from topoeval.models.prompt_tools import prompt_reply, to_prompt_messages
from topoeval.core.policy import EpisodeContext, Policy, SamplingParams

INSTALL_HINT = "pip install 'topoeval[hf]'  (transformers and torch)"


class TransformersPolicy(Policy):
    concurrency = 1

    def __init__(self, folder: str, options: ModelOptions, name: str | None = None):
        self.folder = folder
        self.options = options
        self.name = name or os.path.basename(os.path.normpath(folder))
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
        kwargs = dict(max_new_tokens=sampling.max_tokens, do_sample=temperature > 0, pad_token_id=tok.pad_token_id or tok.eos_token_id)
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
        async with self._lock:
            text, n_in, n_out = await asyncio.to_thread(self._generate, to_prompt_messages(messages, tools), sampling)
        reply = prompt_reply(AssistantMessage(content=text, usage=Usage(prompt_tokens=n_in, completion_tokens=n_out)))
        reply.latency_s = time.perf_counter() - started
        return reply
