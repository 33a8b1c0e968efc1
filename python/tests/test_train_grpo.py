"""GRPO with LoRA on the tiny model (CPU): offline replay of recorded groups, and online sampling scored by a
local reward bridge; plus the replay's bookkeeping and the reward bridge client without training."""

from __future__ import annotations

import math
from typing import Any

import pytest

from massgen_rl_common.protocol import ScriptError
from massgen_rl_training.grpo_replay import Replay, replay_chunks
from massgen_rl_training.reward_bridge import post_rewards
from train_helpers import (
    RewardServer,
    assert_trained,
    free_port,
    generate_with,
    needs_model,
    run_trainer_module,
    served_groups,
    train_config,
    write_jsonl,
)

GROUPS = [
    {
        "group_id": "g0",
        "prompt": [{"role": "user", "content": "What is 2 + 3?"}],
        "completions": [
            {
                "content": text,
                "reward": reward,
                "advantage": 0.0,
                "token_ids": None,
                "logprobs": None,
                "meta": {"rollout_id": f"r{i}", "task_id": "add", "agent": "solver", "seq": 1},
            }
            for i, (text, reward) in enumerate([("5", 1.0), ("7", 0.0), ("five", 0.5)])
        ],
    },
    {
        "group_id": "g1",
        "prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a primary color."}],
        "completions": [
            {
                "content": text,
                "reward": reward,
                "advantage": 0.0,
                "token_ids": ids,
                "logprobs": None,
                "meta": {"rollout_id": f"r{i}", "task_id": "color", "agent": "solver", "seq": 1},
            }
            for i, (text, reward, ids) in enumerate([("Red", 1.0, None), ("Purple", 0.0, [52, 1, 2])])
        ],
    },
]


@needs_model
def test_grpo_offline_replays_recorded_completions(tmp_path):
    dataset = write_jsonl(tmp_path / "data.jsonl", GROUPS)
    run = run_trainer_module(
        "grpo",
        train_config(
            tmp_path, "grpo-offline", dataset, mode="offline", num_generations=2, beta=0.04, max_completion_length=16
        ),
    )
    done = assert_trained(run, 2)
    assert run.of("progress")[1]["rows"] == 3  # g0 (3 completions) -> 2 rows of 2, g1 -> 1 row
    steps = run.of("step")
    assert all(e["reward"] is not None and e["kl"] is not None for e in steps)
    recorded = {0.0, 0.5, 1.0}
    for event in steps:  # replayed rewards only: each batch is one row of two recorded rewards
        assert event["metrics"]["completions/max_length"] <= 16
        assert event["reward"] * 2 in {a + b for a in recorded for b in recorded}
    generate_with(done["path"])


@needs_model
def test_grpo_offline_corrects_a_serving_mismatch_only_when_there_is_one(tmp_path):
    runs = {}
    for name, shift in [("exact", 0.0), ("shifted", 0.3)]:
        dataset = write_jsonl(tmp_path / f"{name}.jsonl", served_groups(shift))
        runs[name] = run_trainer_module(
            "grpo",
            train_config(
                tmp_path,
                f"grpo-{name}",
                dataset,
                mode="offline",
                num_generations=2,
                max_steps=1,
                max_completion_length=16,
            ),
        )
        assert_trained(runs[name], 1)
    exact, shifted = (runs[name].of("step")[0] for name in ("exact", "shifted"))
    assert exact["metrics"]["tis/mean_abs_delta"] < 1e-3 and exact["metrics"]["tis/applied"] == 0.0
    assert exact["metrics"]["tis/mean_weight"] == 1.0
    assert shifted["metrics"]["tis/mean_abs_delta"] == pytest.approx(0.3, abs=1e-3)
    assert shifted["metrics"]["tis/p99_abs_delta"] == pytest.approx(0.3, abs=1e-3)
    assert shifted["metrics"]["tis/applied"] == 1.0
    assert shifted["metrics"]["tis/mean_weight"] == pytest.approx(math.exp(0.3), rel=1e-3)
    # same batch, every token's loss weighted by exp(0.3): the step's loss scales by it
    assert abs(exact["loss"]) > 0.01
    assert shifted["loss"] == pytest.approx(exact["loss"] * math.exp(0.3), rel=1e-2)
    off = run_trainer_module(
        "grpo",
        train_config(
            tmp_path,
            "grpo-off",
            tmp_path / "shifted.jsonl",
            mode="offline",
            num_generations=2,
            max_steps=1,
            max_completion_length=16,
            is_correction="off",
        ),
    )
    assert_trained(off, 1)
    assert not any(key.startswith("tis/") for key in off.of("step")[0]["metrics"])
    assert off.of("step")[0]["loss"] == pytest.approx(exact["loss"], rel=1e-2)


@needs_model
def test_grpo_online_scores_samples_through_the_reward_bridge(tmp_path):
    server = RewardServer(lambda text: float(len(text.split()) % 3))
    try:
        dataset = write_jsonl(tmp_path / "data.jsonl", GROUPS)
        run = run_trainer_module(
            "grpo",
            train_config(
                tmp_path,
                "grpo-online",
                dataset,
                mode="online",
                reward_url=server.url,
                num_generations=2,
                max_completion_length=8,
                temperature=1.0,
            ),
        )
    finally:
        server.close()
    done = assert_trained(run, 2)
    assert all(e["reward"] is not None and e["kl"] is None for e in run.of("step"))  # beta 0: no KL
    assert len(server.requests) == 2  # one generation batch (1 prompt x 2 samples) per step
    for request in server.requests:
        assert len(request["prompts"]) == len(request["completions"]) == len(request["meta"]) == 2
        assert request["prompts"][0] == request["prompts"][1] and request["prompts"][0][-1]["role"] == "user"
        assert all(isinstance(c, str) for c in request["completions"])
        assert request["meta"][0]["group_id"] in {"g0", "g1"} and request["meta"][0]["task_id"] in {"add", "color"}
    generate_with(done["path"])


# -- offline GRPO replay ------------------------------------------------------------------------------------------


def _group(rewards: list[float]) -> dict[str, Any]:
    return {
        "prompt": [{"role": "user", "content": "q"}],
        "completions": [{"content": f"c{i}", "token_ids": [10 + i], "reward": r} for i, r in enumerate(rewards)],
    }


def test_replay_chunks_have_full_size_and_spread_rewards():
    groups = [_group([0, 1]), _group([0, 0, 1]), _group([0, 1, 0, 1]), _group([1, 0, 0, 0, 1])]
    chunks = replay_chunks(groups, 2, seed=3)
    assert [g for g, _ in chunks] == [0, 1, 1, 2, 2, 3, 3, 3]
    for _, chunk in chunks:
        assert len(chunk) == 2 and len({c["reward"] for c in chunk}) == 2  # every row can teach something
    for index, group in enumerate(groups):  # no completion is dropped
        used = {c["content"] for g, chunk in chunks if g == index for c in chunk}
        assert used == {c["content"] for c in group["completions"]}
    assert all(len(chunk) == 4 for _, chunk in replay_chunks([_group([0, 1])], 4, seed=0))


class _FakeTokenizer:
    eos_token_id = 2

    def apply_chat_template(self, messages, **kwargs):
        return {"input_ids": [1, 5, 6]}

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(ch) for ch in text]}


def test_replay_rollout_serves_each_copy_a_different_completion():
    groups = [_group([0, 1]), _group([1, 0])]
    groups[1]["completions"][1]["token_ids"] = None  # tokenized from content + eos
    chunks = replay_chunks(groups, 2, seed=0)
    replay = Replay(_FakeTokenizer(), groups, chunks, 2, max_completion_length=8, max_length=None)
    rows = replay.dataset_rows(chunks, groups)
    # one process: the batch holds each row num_generations times in a row
    inputs = [dict(rows[0]), dict(rows[0]), dict(rows[1]), dict(rows[1])]
    trainer = type("T", (), {"_massgen_inputs": inputs, "accelerator": type("A", (), {"process_index": 0})()})()
    out = replay([r["prompt"] for r in inputs], trainer)
    assert out["prompt_ids"] == [[1, 5, 6]] * 4 and out["logprobs"] is None
    assert sorted(out["recorded_reward"][:2]) == [0, 1] and sorted(out["recorded_reward"][2:]) == [0, 1]
    assert [ord("c"), ord("1"), 2] in out["completion_ids"]
    # two processes: the copies of one row are split across them and must still differ
    halves = []
    for rank in (0, 1):
        trainer._massgen_inputs = [dict(rows[0])]
        trainer.accelerator.process_index = rank
        halves.append(replay([rows[0]["prompt"]], trainer)["completion_ids"][0])
    assert halves[0] != halves[1]


def test_replay_rollout_returns_recorded_logprobs_where_they_fit_the_token_ids():
    groups = [_group([0, 1])]
    groups[0]["completions"][0].update(token_ids=[10, 11, 12], logprobs=[-0.1, -0.2, -0.3])
    groups[0]["completions"][1]["logprobs"] = None  # served without logprobs
    chunks = replay_chunks(groups, 2, seed=0)
    replay = Replay(_FakeTokenizer(), groups, chunks, 2, max_completion_length=2, max_length=None)
    rows = replay.dataset_rows(chunks, groups)
    trainer = type(
        "T", (), {"_massgen_inputs": [dict(rows[0])] * 2, "accelerator": type("A", (), {"process_index": 0})()}
    )()
    out = replay([rows[0]["prompt"]] * 2, trainer)
    by_ids = dict(zip(map(tuple, out["completion_ids"]), out["logprobs"]))
    assert by_ids == {(10, 11): [-0.1, -0.2], (11,): [None]}  # cut like the ids; None per token: no correction


# -- the reward bridge client -------------------------------------------------------------------------------------


def test_post_rewards_round_trip_and_errors():
    server = RewardServer(lambda text: None if text == "skip" else float(len(text)))
    try:
        body = {
            "prompts": [[{"role": "user", "content": "q"}]] * 2,
            "completions": ["abc", "skip"],
            "meta": [{"task_id": "t"}, {"task_id": "t"}],
        }
        assert post_rewards(server.url, body, timeout=10) == [3.0, None]
        assert server.requests == [body]
    finally:
        server.close()
    bad = RewardServer(lambda text: 1.0, status=400)
    try:
        with pytest.raises(ScriptError, match="HTTP 400"):
            post_rewards(bad.url, {"prompts": [], "completions": ["x"], "meta": [{}]}, timeout=10)
    finally:
        bad.close()
    with pytest.raises(ScriptError, match="unreachable"):
        post_rewards(f"http://127.0.0.1:{free_port()}/", {"completions": ["x"]}, timeout=2, attempts=1)
