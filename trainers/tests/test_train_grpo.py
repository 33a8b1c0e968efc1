"""GRPO with LoRA on the tiny model (CPU): offline replay of recorded groups, and online sampling scored by a
local reward bridge."""

from __future__ import annotations

from test_train_common import (RewardServer, assert_trained, generate_with, needs_model, run_trainer_module,
                               train_config, write_jsonl)

GROUPS = [
    {"group_id": "g0", "prompt": [{"role": "user", "content": "What is 2 + 3?"}],
     "completions": [{"content": text, "reward": reward, "advantage": 0.0, "token_ids": None, "logprobs": None,
                      "meta": {"rollout_id": f"r{i}", "task_id": "add", "agent": "solver", "seq": 1}}
                     for i, (text, reward) in enumerate([("5", 1.0), ("7", 0.0), ("five", 0.5)])]},
    {"group_id": "g1", "prompt": [{"role": "system", "content": "Be brief."},
                                  {"role": "user", "content": "Name a primary color."}],
     "completions": [{"content": text, "reward": reward, "advantage": 0.0, "token_ids": ids, "logprobs": None,
                      "meta": {"rollout_id": f"r{i}", "task_id": "color", "agent": "solver", "seq": 1}}
                     for i, (text, reward, ids) in enumerate([("Red", 1.0, None), ("Purple", 0.0, [52, 1, 2])])]},
]


@needs_model
def test_grpo_offline_replays_recorded_completions(tmp_path):
    dataset = write_jsonl(tmp_path / "data.jsonl", GROUPS)
    run = run_trainer_module("grpo", train_config(tmp_path, "grpo-offline", dataset, mode="offline",
                                                  num_generations=2, beta=0.04, max_completion_length=16))
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
def test_grpo_online_scores_samples_through_the_reward_bridge(tmp_path):
    server = RewardServer(lambda text: float(len(text.split()) % 3))
    try:
        dataset = write_jsonl(tmp_path / "data.jsonl", GROUPS)
        run = run_trainer_module("grpo", train_config(tmp_path, "grpo-online", dataset, mode="online",
                                                      reward_url=server.url, num_generations=2,
                                                      max_completion_length=8, temperature=1.0))
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
