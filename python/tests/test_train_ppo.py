"""The PPO-style clipped policy gradient: log-probability bookkeeping, and a full fine-tuning run on CPU."""

from __future__ import annotations

import math

import pytest

from train_helpers import (
    MODEL_DIR,
    assert_trained,
    completion_token_ids,
    generate_with,
    needs_model,
    run_trainer_module,
    teacher_forced_logps,
    train_config,
    write_jsonl,
)

PPO_ROWS = [
    {
        "prompt": [{"role": "user", "content": q}],
        "completion": a,
        "reward": r,
        "return": g,
        "token_ids": None,
        "logprobs": None,
        "meta": {"task_id": "t", "seq": i},
    }
    for i, (q, a, r, g) in enumerate(
        [
            ("What is 2 + 3?", "5", 1.0, 1.0),
            ("What is 2 + 3?", "It is 7.", 0.0, 0.0),
            ("Name a primary color.", "Red", 1.0, 0.9),
            ("Name a primary color.", "Purple", -0.5, -0.5),
        ]
    )
]


@needs_model
def test_padded_completion_logps_match_single_sequences():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from massgen_rl_training.ppo import collate, completion_logps

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=torch.float32).eval()
    examples = []
    for prompt, completion in [("Hi", "Hello there, friend."), ("What is the capital of France? Answer", "Paris")]:
        prompt_ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True, return_dict=True
        )["input_ids"]
        completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        examples.append(
            {
                "prompt_ids": prompt_ids,
                "completion_ids": completion_ids,
                "advantage": 0.0,
                "reward": 0.0,
                "old_logps": None,
            }
        )
    with torch.no_grad():
        batch = collate(examples, tokenizer.pad_token_id)
        padded = completion_logps(model, batch)
        for i, example in enumerate(examples):
            ids = torch.tensor([example["prompt_ids"] + example["completion_ids"]])
            logits = model(input_ids=ids).logits[0, :-1]
            expected = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None]).squeeze(-1)
            c = len(example["completion_ids"])
            assert batch["completion_mask"][i].sum() == c
            assert torch.allclose(padded[i, -c:], expected[-c:], atol=2e-4), (padded[i, -c:], expected[-c:])


@needs_model
def test_ppo_full_fine_tuning_run(tmp_path):
    dataset = write_jsonl(tmp_path / "data.jsonl", PPO_ROWS)
    run = run_trainer_module(
        "ppo", train_config(tmp_path, "ppo", dataset, lora=None, learning_rate=1e-5, beta=0.05, max_length=64)
    )
    done = assert_trained(run, 2, adapter=False)
    first = run.of("step")[0]
    assert abs(first["metrics"]["ratio"] - 1.0) < 1e-3  # the first update is on-policy by construction
    assert all(e["kl"] is not None and e["reward"] is not None for e in run.of("step"))
    generate_with(done["path"])


def _served_rows(shift: float) -> list[dict]:
    """PPO_ROWS with the token ids and logprobs a serving engine recorded: the model's float32 logprobs - shift."""
    rows = []
    for row in PPO_ROWS:
        ids = completion_token_ids(row["completion"])
        rows.append(
            {**row, "token_ids": ids, "logprobs": [x - shift for x in teacher_forced_logps(row["prompt"], ids)]}
        )
    return rows


@needs_model
def test_ppo_corrects_a_serving_mismatch_only_when_there_is_one(tmp_path):
    runs = {}
    for name, shift, extra in [
        ("exact", 0.0, {}),
        ("shifted", 0.3, {}),
        ("off", 0.3, {"is_correction": "off", "old_logprobs": "recorded"}),
    ]:
        dataset = write_jsonl(tmp_path / f"{name}.jsonl", _served_rows(shift))
        runs[name] = run_trainer_module(
            "ppo", train_config(tmp_path, f"ppo-{name}", dataset, max_steps=1, max_length=64, **extra)
        )
        assert_trained(runs[name], 1)
    exact, shifted, off = (runs[name].of("step")[0] for name in ("exact", "shifted", "off"))
    assert exact["metrics"]["tis/mean_abs_delta"] < 1e-3 and exact["metrics"]["tis/applied"] == 0.0
    assert shifted["metrics"]["tis/mean_abs_delta"] == pytest.approx(0.3, abs=1e-3)
    assert shifted["metrics"]["tis/p99_abs_delta"] == pytest.approx(0.3, abs=1e-3)
    assert shifted["metrics"]["tis/applied"] == 1.0
    assert shifted["metrics"]["tis/mean_weight"] == pytest.approx(math.exp(0.3), rel=1e-3)
    # the ratio stays against the trainer's own log-probs (1 on the first step); the loss carries the weight
    assert shifted["metrics"]["ratio"] == pytest.approx(1.0, abs=1e-3)
    assert abs(exact["loss"]) > 0.01
    assert shifted["loss"] == pytest.approx(exact["loss"] * math.exp(0.3), rel=1e-2)
    # is_correction off keeps old_logprobs: recorded as it was: the ratio is against the recorded log-probs
    assert not any(key.startswith("tis/") for key in off["metrics"])
    assert off["metrics"]["ratio"] == pytest.approx(math.exp(0.3), rel=1e-3)
