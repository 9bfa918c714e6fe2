"""topoeval.integrations.verl: verl 0.9.1's real agent-loop machinery — the loop built by
``hydra.utils.instantiate`` from the shipped agent_loops.yaml as verl's AgentLoopWorker does, its
Continuous Token builder (Qwen boundary handling), a scripted server manager whose ``generate`` returns
the token ids of scripted replies, and an offline byte-level tokenizer with a Hermes chat template.

Runs in .venv-verl (`make test-adapters` builds it: torch 2.13 CPU + verl==0.9.1); skipped where verl is absent."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("verl", reason="the 'verl' extra is not installed (make test runs this file in .venv-verl)")

import hydra  # noqa: E402
import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    AgentLoopOutput,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

import topoeval  # noqa: E402
from topoeval.integrations.text_episode import TextEpisode  # noqa: E402
from topoeval.integrations.verl import AGENT_LOOPS_YAML, TopoevalAgentLoop, compute_score  # noqa: E402

from .verl_fixtures import byte_tokenizer, conversation_row, export, scripted  # noqa: E402

TOKENIZER = byte_tokenizer()
IM_END = TOKENIZER.convert_tokens_to_ids("<|im_end|>")


class ScriptedServer:
    """verl's server manager, scripted: each generate returns the next reply's token ids (+ <|im_end|>)."""

    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.calls: list[dict] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        text = self.replies.pop(0) if self.replies else ""
        ids = TOKENIZER.encode(text, add_special_tokens=False) + [IM_END]
        ids = ids[: sampling_params["max_tokens"]]
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids), "output": ids,
                           "sampling_params": dict(sampling_params)})
        return TokenOutput(token_ids=ids, log_probs=[-0.25] * len(ids), stop_reason="completed")


def build_loop(server: ScriptedServer, response_length: int = 16384) -> TopoevalAgentLoop:
    """The loop as verl's AgentLoopWorker builds it: its agent_loop_config_path entries, then instantiate."""
    for entry in OmegaConf.load(AGENT_LOOPS_YAML):
        _agent_loop_registry[entry.name] = entry
    config = OmegaConf.create({
        "actor_rollout_ref": {"rollout": {"prompt_length": 8192, "response_length": response_length,
                                          "multi_turn": {"max_assistant_turns": None}}},
        "data": {"apply_chat_template_kwargs": {}},
    })
    return hydra.utils.instantiate(
        config=_agent_loop_registry["topoeval"], trainer_config=DictConfigWrap(config), server_manager=server,
        tokenizer=TOKENIZER, processor=None, hf_model_type="qwen2", dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data), tools=ToolListWrap([]))


def play(row: dict, replies: list[str], **loop_kwargs) -> tuple[AgentLoopOutput, ScriptedServer]:
    server = ScriptedServer(replies)

    async def go() -> AgentLoopOutput:  # built inside the running event loop, as in verl's worker
        loop = build_loop(server, **loop_kwargs)
        # the row's non-tensor fields, as verl's AgentLoopWorker hands them to the loop it picked by agent_name
        fields = {k: v for k, v in row.items() if not isinstance(v, torch.Tensor)}
        return await loop.run({"temperature": 1.0, "top_p": 1.0}, **fields)

    return asyncio.run(go()), server


def segments(out: AgentLoopOutput) -> list[tuple[int, list[int]]]:
    """The response as runs of equal mask: (mask, token ids)."""
    runs: list[tuple[int, list[int]]] = []
    for tok, m in zip(out.response_ids, out.response_mask, strict=True):
        if runs and runs[-1][0] == m:
            runs[-1][1].append(tok)
        else:
            runs.append((m, [tok]))
    return runs


def policy_trajectory(out: AgentLoopOutput, row: dict) -> list[dict]:
    """The trajectory read back from the tokens alone: each mask-1 run is one assistant turn, parsed in the
    row's format."""
    ep = TextEpisode.from_row(row["extra_info"])
    try:
        replies = [ep.parse(TOKENIZER.decode(ids, skip_special_tokens=True)).openai()
                   for m, ids in segments(out) if m == 1]
    finally:
        ep.close()
    return [{"role": "user", "content": ep.task.prompt}, *replies]


def transcript(out: AgentLoopOutput) -> str:
    lines = []
    for m, ids in segments(out):
        text = TOKENIZER.decode(ids).replace("\n", "\\n")
        lines.append(f"  mask={m} {len(ids):5d} tokens  {text[:110]}")
    return "\n".join(lines)


def through_verls_dataset(tmp, **kwargs) -> dict[str, list[dict]]:
    """Export, then read every file with verl's own RLHFDataset (the trainer's data path)."""
    export(tmp, "verl", **kwargs)
    config = OmegaConf.create({"max_prompt_length": 8192, "prompt_key": "prompt", "filter_overlong_prompts": False,
                               "cache_dir": str(tmp / "cache")})
    out = {}
    for name, topology in (("train", "train"), ("val_wiki", "wiki"), ("val_travel", "travel")):
        ds = RLHFDataset(data_files=[str(tmp / f"{name}.parquet")], tokenizer=TOKENIZER, config=config, processor=None)
        out[topology] = [ds[i] for i in range(len(ds))]
    return out


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return through_verls_dataset(tmp_path_factory.mktemp("verl"))


def test_verls_dataset_reads_the_export(rows):
    item = rows["travel"][0]
    assert item["agent_name"] == "topoeval" and item["data_source"] == "travel" and item["index"] == 0
    assert item["raw_prompt"] == item["prompt"] and [m["role"] for m in item["raw_prompt"]] == ["system", "user"]
    assert {r["data_source"] for r in rows["train"]} == {"wiki"}


def test_the_shipped_yaml_names_the_registered_loop():
    entries = OmegaConf.load(AGENT_LOOPS_YAML)
    assert [(e.name, e._target_) for e in entries] == [("topoeval", "topoeval.integrations.verl.TopoevalAgentLoop")]
    assert isinstance(build_loop(ScriptedServer([])), TopoevalAgentLoop)


@pytest.fixture(scope="module")
def native_rows(tmp_path_factory):
    return through_verls_dataset(tmp_path_factory.mktemp("verl-native"), n=1, tool_format="native")


@pytest.mark.parametrize(("topology", "tool_format"), [("wiki", "hermes"), ("travel", "hermes"), ("travel", "native")])
def test_oracle_episode_reward_one_mask_exactly_the_policy_tokens(rows, native_rows, topology, tool_format):
    row = (rows if tool_format == "hermes" else native_rows)[topology][0]
    replies = scripted(row["extra_info"])
    out, server = play(row, replies)
    print(f"\n{topology} ({tool_format}): {len(server.calls)} generate calls, num_turns={out.num_turns}, "
          f"mask 1: {sum(out.response_mask)} tokens, mask 0: {len(out.response_mask) - sum(out.response_mask)}, "
          f"reward_score={out.reward_score}\n{transcript(out)}")
    assert out.reward_score == 1.0 and out.extra_fields["topoeval/success"] == 1.0
    # the reward is topoeval.reward on the trajectory read back from the policy's tokens
    assert topoeval.reward(_row_task(row), policy_trajectory(out, row), topology=_row_topology(row)) == out.reward_score
    # mask 1 covers exactly the generated tokens, in order; everything else is mask 0
    generated = [t for c in server.calls for t in c["output"]]
    assert [t for m, ids in segments(out) if m == 1 for t in ids] == generated
    assert sum(out.response_mask) == len(generated)
    assert [lp != 0.0 for lp in out.response_logprobs] == [m == 1 for m in out.response_mask]
    assert len(server.calls) == len(replies) == out.num_turns // 2
    # token-in/token-out: the prompt is the chat template of the opening messages, applied once; every
    # later prompt extends the previous one by what was generated (the history is never re-tokenised)
    shadow = TextEpisode.from_row(row["extra_info"])
    tools = shadow.template_tools()
    shadow.close()
    assert (tools is not None) == (tool_format == "native")
    assert out.prompt_ids == TOKENIZER.apply_chat_template(row["prompt"], tools=tools, tokenize=True,
                                                           add_generation_prompt=True, return_dict=False)
    for before, after in zip(server.calls, server.calls[1:], strict=False):
        grown = before["prompt_ids"] + before["output"]
        assert after["prompt_ids"][: len(grown)] == grown
    assert out.prompt_ids + out.response_ids == server.calls[-1]["prompt_ids"] + server.calls[-1]["output"]
    # tool results come back in user turns, masked
    for m, ids in segments(out):
        if m == 0:
            assert TOKENIZER.decode(ids).lstrip("\n").startswith("<|im_start|>user\n")


def _row_task(row: dict) -> dict:
    import json

    return json.loads(row["extra_info"]["topoeval_task"])


def _row_topology(row: dict) -> dict:
    import json

    return json.loads(row["extra_info"]["topology_spec"])


def test_the_travellers_turns_are_user_turns_outside_the_mask(rows):
    row = rows["travel"][0]
    out, _ = play(row, scripted(row["extra_info"]))
    user_turns = [TOKENIZER.decode(ids) for m, ids in segments(out) if m == 0]
    answers = [t for t in user_turns if 'name="ask_user"' in t]
    assert answers, "the oracle asks the traveller to confirm before paying"
    assert all(t.lstrip("\n").startswith("<|im_start|>user\n") and t.rstrip().endswith("<|im_start|>assistant")
               for t in answers)
    assert out.extra_fields["topoeval/risk"] == 1.0  # the payment was confirmed first


@pytest.mark.parametrize("topology", ["wiki", "travel"])
def test_noop_reward_zero(rows, topology):
    row = rows[topology][1]
    out, server = play(row, scripted(row["extra_info"], "noop"))
    assert out.reward_score == 0.0 == out.extra_fields["topoeval/success"]
    assert len(server.calls) == 1 and out.num_turns == 2 and sum(out.response_mask) == len(out.response_mask) == 1


def test_a_malformed_call_is_a_recorded_invalid_call(rows):
    row = rows["wiki"][0]
    out, _ = play(row, ['<tool_call>{"name": "search", "arguments": {"query": oops</tool_call>', "no idea"])
    assert out.extra_fields["topoeval/invalid_calls"] == 1.0 and out.reward_score == 0.0
    assert out.extra_fields["reward_extra_info"]["topoeval_invalid_calls"] == 1.0
    observation = [TOKENIZER.decode(ids) for m, ids in segments(out) if m == 0][0]
    assert "arguments are not valid JSON" in observation


def test_the_response_length_ends_the_episode_scored_as_it_stands(rows):
    row = rows["travel"][0]
    replies = scripted(row["extra_info"])
    out, server = play(row, replies, response_length=600)
    assert len(out.response_ids) == len(out.response_mask) <= 600
    assert out.extra_fields["topoeval/truncated"] == 1.0 and out.reward_score == 0.0
    assert len(server.calls) < len(replies)
    assert all(c["sampling_params"]["max_tokens"] <= 600 for c in server.calls)


def test_metric_mix_and_the_same_summary_keys_on_every_row(tmp_path):
    rows = through_verls_dataset(tmp_path, n=1, metric={"success": 0.5, "dq": 0.5})
    keys = set()
    for topology in ("wiki", "travel"):
        row = rows[topology][0]
        out, _ = play(row, scripted(row["extra_info"], "oracle-no-ask" if topology == "travel" else "oracle"))
        scores = topoeval.reward(_row_task(row), policy_trajectory(out, row), topology=_row_topology(row), metric="all")
        assert out.reward_score == pytest.approx(0.5 * scores["success"] + 0.5 * (scores["dq"] or 0.0))
        keys.add(tuple(out.extra_fields["reward_extra_info"]))
    assert len(keys) == 1


def test_compute_score_fallback_reads_one_turn(rows):
    row = rows["wiki"][0]
    task = _row_task(row)
    right = compute_score(row["data_source"], task["answer"], row["reward_model"]["ground_truth"], row["extra_info"])
    wrong = compute_score(row["data_source"], "not it", row["reward_model"]["ground_truth"], row["extra_info"])
    assert right["score"] == right["success"] == 1.0 and wrong["score"] == 0.0
    assert right["score"] == topoeval.reward(task, [{"role": "user", "content": task["prompt"]},
                                                    {"role": "assistant", "content": task["answer"]}],
                                             topology=_row_topology(row))


def test_a_conversations_later_instructions_are_user_turns_outside_the_mask():
    row = conversation_row("verl")
    out, server = play(row, scripted(row["extra_info"]))
    assert out.reward_score == 1.0
    instructions = [i["content"] for i in _row_task(row)["instructions"]]
    plain_user_turns = [TOKENIZER.decode(ids) for m, ids in segments(out) if m == 0 and "<tool_response" not in
                        TOKENIZER.decode(ids)]
    assert len(plain_user_turns) == len(instructions) == 2
    for text, instruction in zip(plain_user_turns, instructions, strict=True):
        assert text.lstrip("\n").startswith("<|im_start|>user\n" + instruction)
    assert sum(out.response_mask) == sum(len(c["output"]) for c in server.calls)
