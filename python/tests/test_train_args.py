"""Trainer config parsing without training: the shared keys, per-algorithm checks, and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_module
from massgen_rl_common.config_args import UsageError
from massgen_rl_training.args import parse_train_args
from massgen_rl_training.grpo import GRPOArgs
from massgen_rl_training.ppo import PPOArgs
from massgen_rl_training.sft import SFTArgs
from train_helpers import SFT_ROWS, write_jsonl


def _base_config(tmp_path: Path, **values: Any) -> Path:
    dataset = write_jsonl(tmp_path / "data.jsonl", SFT_ROWS)
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    config = {"model_path": str(model), "output_dir": str(tmp_path / "out"), "dataset_path": str(dataset), **values}
    path = tmp_path / "train.yaml"
    path.write_text(json.dumps(config))
    return path


def test_lora_mapping_from_config_and_cli(tmp_path):
    config = _base_config(tmp_path, lora={"r": 4, "alpha": 16, "target_modules": ["q_proj", "v_proj"]})
    args = parse_train_args(SFTArgs, ["--config", str(config)])
    assert args.lora == {"r": 4, "alpha": 16, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    args = parse_train_args(SFTArgs, ["--config", str(config), "--lora", '{"r": 2}'])
    assert args.lora == {"r": 2, "alpha": 4, "dropout": 0.0, "target_modules": None}
    assert parse_train_args(SFTArgs, ["--config", str(config), "--lora", "null"]).lora is None


@pytest.mark.parametrize(
    "values, needle",
    [
        ({"lora_rank": 4}, "'lora_rank'"),
        ({"lora": {"rank": 4}}, "unknown lora key"),
        ({"lora": {"r": 0}}, "lora.r"),
        ({"max_steps": 0}, "max_steps"),
        ({"learning_rate": "fast"}, "learning_rate"),
        ({"resume_from_checkpoint": "/nonexistent/checkpoint-3"}, "not a checkpoint"),
    ],
)
def test_bad_config_is_a_usage_error(tmp_path, values, needle):
    with pytest.raises(UsageError, match=needle):
        parse_train_args(SFTArgs, ["--config", str(_base_config(tmp_path, **values))])


def test_grpo_config_checks(tmp_path):
    with pytest.raises(UsageError, match="reward_url"):
        parse_train_args(GRPOArgs, ["--config", str(_base_config(tmp_path, mode="online"))])
    with pytest.raises(UsageError, match="multiple of num_generations"):
        parse_train_args(
            GRPOArgs, ["--config", str(_base_config(tmp_path, num_generations=4, per_device_train_batch_size=2))]
        )


def test_mismatch_correction_options(tmp_path):
    config = _base_config(tmp_path)
    # YAML as the CLI writes it (YAML 1.2): `on`/`off` are strings there, only true/false are booleans
    lines = [f"{key}: {json.dumps(value)}" for key, value in json.loads(config.read_text()).items()]
    config.write_text(
        "\n".join(
            lines
            + [
                "is_correction: off",
                "is_cap: 2",
                "use_cpu: true",
                "num_generations: 2",
                "per_device_train_batch_size: 2",
            ]
        )
        + "\n"
    )
    args = parse_train_args(GRPOArgs, ["--config", str(config)])
    assert (args.is_correction, args.is_threshold, args.is_cap, args.use_cpu) == ("off", 0.02, 2.0, True)
    ppo = parse_train_args(
        PPOArgs, ["--config", str(_base_config(tmp_path)), "--is-correction", "on", "--is-threshold", "0.1"]
    )
    assert (ppo.is_correction, ppo.is_threshold, ppo.is_cap) == ("on", 0.1, 3.0)
    assert parse_train_args(PPOArgs, ["--config", str(_base_config(tmp_path))]).is_correction == "auto"
    for cls, extra in [(GRPOArgs, {"num_generations": 2, "per_device_train_batch_size": 2}), (PPOArgs, {})]:
        for values, needle in [
            ({"is_correction": "sometimes"}, "is_correction"),
            ({"is_cap": 0.5}, "is_cap"),
            ({"is_threshold": -0.1}, "is_threshold"),
        ]:
            with pytest.raises(UsageError, match=needle):
                parse_train_args(cls, ["--config", str(_base_config(tmp_path, **extra, **values))])


@pytest.mark.parametrize("algo", ["sft", "dpo", "grpo", "ppo"])
def test_unknown_config_key_exits_2(tmp_path, algo):
    run = run_module(f"massgen_rl_training.{algo}", "--config", str(_base_config(tmp_path, not_a_key=1)))
    assert run.returncode == 2, run.stderr
    assert [e["event"] for e in run.events] == ["error"] and run.last["kind"] == "usage"
    assert "'not_a_key'" in run.last["message"]


def test_missing_model_folder_exits_2(tmp_path):
    config = _base_config(tmp_path)
    values = json.loads(config.read_text())
    values["model_path"] = str(tmp_path / "nowhere")
    config.write_text(json.dumps(values))
    run = run_module("massgen_rl_training.sft", "--config", str(config))
    assert run.returncode == 2 and run.last["kind"] == "usage" and "model_path" in run.last["message"]


def test_grpo_vllm_server_mode_reaches_grpoconfig(tmp_path, monkeypatch):
    from massgen_rl_training.grpo import grpo_config

    vllm = {"mode": "server", "server_host": "10.0.0.2", "server_port": 8001, "group_port": 51300}
    config = _base_config(
        tmp_path,
        mode="online",
        reward_url="http://127.0.0.1:1/rewards",
        num_generations=2,
        per_device_train_batch_size=2,
        use_cpu=True,
        vllm=vllm,
    )
    args = parse_train_args(GRPOArgs, ["--config", str(config)])
    assert args.vllm == {
        "mode": "server",
        "server_base_url": None,
        "server_host": "10.0.0.2",
        "server_port": 8001,
        "server_timeout": 240.0,
        "group_port": 51300,
        "gpu_memory_utilization": 0.3,
        "tensor_parallel_size": 1,
        "max_model_length": None,
    }
    trl = grpo_config(args)  # TRL's own GRPOConfig: vLLM itself is only needed once the trainer starts
    assert (trl.use_vllm, trl.vllm_mode, trl.vllm_server_host, trl.vllm_server_port, trl.vllm_group_port) == (
        True,
        "server",
        "10.0.0.2",
        8001,
        51300,
    )
    assert trl.vllm_server_base_url is None and trl.vllm_server_timeout == 240.0
    monkeypatch.setenv("WORLD_SIZE", "2")  # colocated engines of 2 GPUs split the processes
    colocate = parse_train_args(
        GRPOArgs,
        [
            "--config",
            str(config),
            "--vllm",
            '{"mode": "colocate", "gpu_memory_utilization": 0.5, "tensor_parallel_size": 2}',
        ],
    )
    monkeypatch.delenv("WORLD_SIZE")  # (TrainingArguments would look for the other process)
    trl = grpo_config(colocate)
    assert (trl.vllm_mode, trl.vllm_gpu_memory_utilization, trl.vllm_tensor_parallel_size) == ("colocate", 0.5, 2)
    assert grpo_config(parse_train_args(GRPOArgs, ["--config", str(config), "--vllm", "null"])).use_vllm is False


@pytest.mark.parametrize(
    "values, needle",
    [
        ({"vllm": {"mode": "server"}}, "only mode 'online'"),
        ({"mode": "online", "vllm": {"mode": "remote"}}, "vllm.mode"),
        ({"mode": "online", "vllm": {"server_port": 0}}, "vllm.server_port"),
        ({"mode": "online", "vllm": {"gpu_memory_utilization": 1.5}}, "vllm.gpu_memory_utilization"),
        ({"mode": "online", "vllm": {"server_base_url": "10.0.0.2:8000"}}, "vllm.server_base_url"),
        ({"mode": "online", "vllm": {"host": "x"}}, "unknown vllm key"),
    ],
)
def test_grpo_vllm_checks(tmp_path, values, needle):
    config = _base_config(
        tmp_path, reward_url="http://127.0.0.1:1/rewards", num_generations=2, per_device_train_batch_size=2, **values
    )
    with pytest.raises(UsageError, match=needle):
        parse_train_args(GRPOArgs, ["--config", str(config)])


@pytest.mark.parametrize("native", [True, False])
def test_bf16_unset_on_cpu_follows_the_cpus_bf16_instructions(tmp_path, monkeypatch, native):
    import torch

    from massgen_rl_training.settings import device_flags

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False, raising=False)
    unset = parse_train_args(SFTArgs, ["--config", str(_base_config(tmp_path, use_cpu=True, bf16=None))])
    assert device_flags(unset) == (True, native)
    off = parse_train_args(SFTArgs, ["--config", str(_base_config(tmp_path, use_cpu=True, bf16=False))])
    assert device_flags(off) == (True, False)


def test_sft_rows_are_cut_to_max_length_and_a_row_left_nothing_to_learn_is_dropped():
    from datasets import Dataset

    from massgen_rl_training.sft import truncated

    rows = [
        {"input_ids": [1, 2, 3, 4, 5], "labels": [-100, -100, 3, 4, 5]},
        {"input_ids": [1, 2, 3, 4, 5], "labels": [-100, -100, -100, -100, 5]},  # its completion is past the cut
        {"input_ids": [1, 2], "labels": [-100, 2]},
    ]
    out = truncated(Dataset.from_list(rows), 3)
    assert out["input_ids"] == [[1, 2, 3], [1, 2]] and out["labels"] == [[-100, -100, 3], [-100, 2]]
