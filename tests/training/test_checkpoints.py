"""What a sweep's summary records of the training it evaluates (topoeval.training.checkpoints)."""

from topoeval.models.adapters import grpo_adapter_name
from topoeval.training.checkpoints import sweep_training

GRPO = {"model": "smollm2-135m-wiki-grpo", "method": "grpo", "steps": 40, "config": {"save_steps": 8},
        "checkpoints": {"every": 8}}
SFT = {"model": "smollm2-135m-wiki", "steps": 200, "config": {"save_steps": 25}}


def test_the_spacing_is_the_sweeps_choice_else_the_runs_checkpoint_interval():
    assert sweep_training(GRPO, "adapters/g.json") == {"model": "smollm2-135m-wiki-grpo", "method": "grpo",
                                                       "record": "adapters/g.json", "steps": 40, "every": 8}
    assert sweep_training(GRPO, "g.json", every=16)["every"] == 16  # --every 16: the evaluated points' spacing
    sft = sweep_training(SFT, "s.json")
    assert sft["method"] == "sft" and sft["every"] == 25  # a record without checkpoints: its save_steps
    assert sweep_training(SFT, "s.json", every=50)["every"] == 50


def test_a_grpo_adapters_name_is_its_topologys_adapter_name_and_the_suffix():
    assert grpo_adapter_name("wiki") == "smollm2-135m-wiki-grpo"
