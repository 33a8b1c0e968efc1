"""DPO with LoRA on the tiny model (CPU), continuing the SFT adapter as a parent checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from train_helpers import (  # noqa: F401
    assert_trained,
    generate_with,
    needs_model,
    run_trainer_module,
    sft_adapter,
    train_config,
    write_jsonl,
)

PAIRS = [
    ("What is 2 + 3?", "5", "7"),
    ("Name a primary color.", "Red", "Purple"),
    ("What is the capital of France?", "Paris", "Lyon"),
    ("Say hi.", "Hi!", "No."),
]
DPO_ROWS = [
    {
        "prompt": [{"role": "user", "content": q}],
        "chosen": [{"role": "assistant", "content": good}],
        "rejected": [{"role": "assistant", "content": bad}],
        "margin": 1.0,
        "meta": {"task_id": "t", "seq": i},
    }
    for i, (q, good, bad) in enumerate(PAIRS)
]


@needs_model
def test_dpo_continues_the_parent_adapter(tmp_path, sft_adapter):
    parent = Path(sft_adapter["done"]["path"])
    dataset = write_jsonl(tmp_path / "data.jsonl", DPO_ROWS)
    schedule = {"lr_scheduler_type": "constant_with_warmup", "warmup_steps": 0.5}  # warm up over 1 of the 2 steps
    run = run_trainer_module(
        "dpo", train_config(tmp_path, "dpo", dataset, model_path=str(parent), beta=0.1, save_steps=1, **schedule)
    )
    done = assert_trained(run, 2)
    # After its warmup the constant schedule holds the peak; the default (linear decay) never ends there.
    assert run.of("step")[-1]["learning_rate"] == pytest.approx(1e-4)
    assert all(isinstance(e["reward"], float) and e["kl"] is None for e in run.of("step"))  # reward: margins
    assert "rewards/accuracies" in run.of("step")[-1]["metrics"]
    assert [e["step"] for e in run.of("checkpoint")] == [1, 2]
    manifest = json.loads((Path(done["path"]) / "massgen-rl-train.json").read_text())
    assert manifest["parent_adapter"] == str(parent.resolve())
    # still an adapter of the original base model, so it is servable on its own
    assert done["base_model"] == sft_adapter["done"]["base_model"]
    generate_with(done["path"])


@needs_model
def test_dpo_adds_an_sft_term_on_the_chosen_answers(tmp_path):
    dataset = write_jsonl(tmp_path / "data.jsonl", DPO_ROWS)
    config = train_config(tmp_path, "dpo", dataset, max_steps=1, loss_type=["sigmoid", "sft"], loss_weights=[1, 1])
    run = run_trainer_module("dpo", config)
    assert_trained(run, 1)
    sigmoid = run_trainer_module("dpo", train_config(tmp_path, "plain", dataset, max_steps=1))
    # The SFT term is the chosen answers' negative log-likelihood: the combined loss is larger by it.
    assert run.of("step")[0]["loss"] > sigmoid.of("step")[0]["loss"] + 0.5
