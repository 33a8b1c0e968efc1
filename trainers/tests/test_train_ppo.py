"""The PPO-style clipped policy gradient: log-probability bookkeeping, and a full fine-tuning run on CPU."""

from __future__ import annotations

from train_helpers import (MODEL_DIR, assert_trained, generate_with, needs_model, run_trainer_module,
                               train_config, write_jsonl)

PPO_ROWS = [{"prompt": [{"role": "user", "content": q}], "completion": a, "reward": r, "return": g,
             "token_ids": None, "logprobs": None, "meta": {"task_id": "t", "seq": i}}
            for i, (q, a, r, g) in enumerate([("What is 2 + 3?", "5", 1.0, 1.0), ("What is 2 + 3?", "It is 7.", 0.0, 0.0),
                                              ("Name a primary color.", "Red", 1.0, 0.9),
                                              ("Name a primary color.", "Purple", -0.5, -0.5)])]


@needs_model
def test_padded_completion_logps_match_single_sequences():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from massgen_rl_trainers.train.ppo import collate, completion_logps

    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=torch.float32).eval()
    examples = []
    for prompt, completion in [("Hi", "Hello there, friend."), ("What is the capital of France? Answer", "Paris")]:
        prompt_ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                   tokenize=True, return_dict=True)["input_ids"]
        completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        examples.append({"prompt_ids": prompt_ids, "completion_ids": completion_ids, "advantage": 0.0, "reward": 0.0,
                         "old_logps": None})
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
    run = run_trainer_module("ppo", train_config(tmp_path, "ppo", dataset, lora=None, learning_rate=1e-5, beta=0.05,
                                                 max_length=64))
    done = assert_trained(run, 2, adapter=False)
    first = run.of("step")[0]
    assert abs(first["metrics"]["ratio"] - 1.0) < 1e-3  # the first update is on-policy by construction
    assert all(e["kl"] is not None and e["reward"] is not None for e in run.of("step"))
    generate_with(done["path"])
