"""The check `doctor` and `train` run on a config's trainer settings (massgen_rl_training/check.py): names, types, ranges, key
paths in every message, defaults filled in, exit 2."""

from __future__ import annotations

import json

import pytest

from conftest import run_module
from massgen_rl_common.config_args import UsageError
from massgen_rl_training.check import RUN_KEYS, check_settings, setting_names
from massgen_rl_training.grpo import GRPOArgs


def test_defaults_fill_in_and_values_take_the_field_type():
    grpo = check_settings("grpo", {"num_train_epochs": 2, "learning_rate": "2e-4", "is_correction": "on"})
    assert (grpo["num_train_epochs"], grpo["learning_rate"], grpo["is_correction"]) == (2.0, 2e-4, "on")
    assert (grpo["per_device_train_batch_size"], grpo["num_generations"], grpo["save_steps"], grpo["vllm"]) == (
        4,
        4,
        50,
        None,
    )
    assert set(grpo) == set(setting_names(GRPOArgs)) and not set(grpo) & set(RUN_KEYS)
    assert check_settings("grpo", {"vllm": {"mode": "server"}, "mode": "online"})["vllm"]["server_timeout"] == 240.0
    dpo = check_settings("dpo", {"loss_type": ["sigmoid", "sft"], "loss_weights": [1, 0.5]})
    assert (dpo["loss_type"], dpo["loss_weights"]) == (["sigmoid", "sft"], [1.0, 0.5])
    assert (check_settings("dpo", {})["loss_type"], check_settings("dpo", {})["loss_weights"]) == (["sigmoid"], None)
    schedule = check_settings("dpo", {"warmup_steps": 0.1, "lr_scheduler_type": "cosine"})
    assert (schedule["warmup_steps"], schedule["lr_scheduler_type"]) == (0.1, "cosine")
    assert (check_settings("sft", {})["warmup_steps"], check_settings("sft", {})["lr_scheduler_type"]) == (0, "linear")


@pytest.mark.parametrize(
    "algo, settings, processes, cpu_only, message",
    [
        (
            "grpo",
            {"num_generationz": 4},
            1,
            False,
            r"^train\.grpo\.num_generationz: unknown setting of the grpo trainer",
        ),
        ("sft", {"model_path": "/m"}, 1, False, r"^train\.sft\.model_path: set by massgen-rl for each run"),
        ("sft", {"learning_rate": "fast"}, 1, False, r"^train\.sft\.learning_rate must be float"),
        ("dpo", {"max_steps": 2.5}, 1, False, r"^train\.dpo\.max_steps must be an integer"),
        ("dpo", {"loss_type": ["sigmoid", "sftt"]}, 1, False, r"^train\.dpo\.loss_type has unknown 'sftt' \(TRL's: "),
        ("dpo", {"loss_type": []}, 1, False, r"^train\.dpo\.loss_type must be a loss name or a non-empty list"),
        (
            "dpo",
            {"loss_type": ["sigmoid", "sft"], "loss_weights": [1]},
            1,
            False,
            r"^train\.dpo\.loss_weights must be 2 number\(s\) from 0 to 1e6, one per loss_type, got \[1\]",
        ),
        ("ppo", {"is_cap": 0.5}, 1, False, r"^train\.ppo\.is_cap must be a number from 1"),
        ("dpo", {"warmup_ratio": 0.1}, 1, False, r"^train\.dpo\.warmup_ratio: not a setting .* warmup_steps below 1"),
        ("dpo", {"warmup_steps": 2.5}, 1, False, r"^train\.dpo\.warmup_steps must be a whole number of steps"),
        (
            "sft",
            {"lr_scheduler_type": "cosine_with_min_lr"},
            1,
            False,
            r"^train\.sft\.lr_scheduler_type must be one of",
        ),
        (
            "grpo",
            {"num_generations": 3},
            1,
            False,
            r"^train\.grpo\.num_generations \(3\): .* multiple of num_generations",
        ),
        ("grpo", {"num_generations": 8}, 3, False, r"\(8\): .*\(12\) counts completions"),
        (
            "grpo",
            {"vllm": {"mode": "server"}},
            1,
            False,
            r"^train\.grpo\.vllm generates samples, which only mode 'online'",
        ),
        ("grpo", {"mode": "online", "vllm": {}}, 1, True, r"vllm needs CUDA GPUs, but train\.gpus is none"),
        (
            "grpo",
            {"mode": "online", "vllm": {"mode": "colocate", "tensor_parallel_size": 2}},
            3,
            False,
            r"^train\.grpo\.vllm\.tensor_parallel_size \(2\): colocated engines split the 3",
        ),
        (
            "sft",
            {"num_train_epochs": 1e9},
            1,
            False,
            r"^train\.sft\.num_train_epochs must be positive and at most 10000",
        ),
    ],
)
def test_bad_settings_name_their_key_path(algo, settings, processes, cpu_only, message):
    if algo == "grpo" and "num_generations" not in settings:
        settings = {**settings, "num_generations": 2}
    with pytest.raises(UsageError, match=message):
        check_settings(algo, settings, processes, cpu_only)


def test_the_module_answers_with_json_and_exits_2_listing_every_bad_section():
    ok = run_module(
        "massgen_rl_training.check", "--request", json.dumps({"sections": {"sft": {}, "dpo": {"beta": 0.2}}})
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.last["event"] == "done" and ok.last["settings"]["dpo"]["beta"] == 0.2
    bad = run_module(
        "massgen_rl_training.check", "--request", json.dumps({"sections": {"sft": {"bogus": 1}, "dpo": {"beta": 0}}})
    )
    assert bad.returncode == 2 and bad.last["kind"] == "usage"
    assert [line.split(" ", 1)[0].rstrip(":") for line in bad.last["message"].splitlines()] == [
        "train.sft.bogus",
        "train.dpo.beta",
    ]
