"""The closed sets of choices the CLI and the API take, as enums (so ``--help`` lists them and a wrong
value is refused by name). A plain module, cheap to import: the CLI reads it at start."""

from __future__ import annotations

from enum import Enum


class ToolMode(str, Enum):
    """How tools reach a model: native function calling, rendered into the prompt, or by capability."""

    auto = "auto"
    native = "native"
    prompt = "prompt"


class Executor(str, Enum):
    """Where a run's shards execute: this machine's processes, or Ray tasks."""

    local = "local"
    ray = "ray"


class Split(str, Enum):
    """A task split of a topology (disjoint by construction)."""

    train = "train"
    dev = "dev"
    test = "test"
    fewshot = "fewshot"


class ExportFormat(str, Enum):
    """What ``topoeval export`` writes: tasks for RL trainers, or successful conversations for SFT."""

    rl = "rl"
    sft = "sft"
