"""The bundled accelerate configs (python/accelerate/*.yaml), read by accelerate itself the way `massgen-rl train`
launches them over two machines: accelerate's config loader, its launch-argument processing, the environment its
launcher hands the processes, and the DeepSpeed / FSDP plugin the processes build from that environment. Running
DeepSpeed needs the deepspeed package, which the trainer venv does not install: these only load and check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import PYTHON_DIR

ACCELERATE_DIR = PYTHON_DIR / "accelerate"
EXPECTED = {"cpu-2proc", "deepspeed-zero2", "deepspeed-zero3", "fsdp"}


def _launch_args(config: Path, machine_rank: int = 1):
    """accelerate's launch arguments as src/trainers/launch.ts builds them: 4 processes over 2 machines."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    argv = [
        "--main_process_port",
        "29555",
        "--num_processes",
        "4",
        "--config_file",
        str(config),
        "--num_machines",
        "2",
        "--machine_rank",
        str(machine_rank),
        "--main_process_ip",
        "10.0.0.1",
        "-m",
        "massgen_rl_training.sft",
        "--config",
        "trainer.yaml",
    ]
    args, defaults, _ = _validate_launch_command(launch_command_parser().parse_args(argv))
    return args, defaults


def _launch_env(args, defaults) -> dict[str, str]:
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

    if args.use_deepspeed:  # as accelerate's launch_command does before its deepspeed launcher
        args.deepspeed_fields_from_accelerate_config = ",".join(defaults.deepspeed_config.keys())
        _, env = prepare_deepspeed_cmd_env(args)
    else:
        env = prepare_multi_gpu_env(args)
    return {key: value for key, value in env.items() if key.startswith(("ACCELERATE_", "FSDP_"))}


@pytest.fixture
def plugin_env(monkeypatch):
    def apply(env: dict[str, str]) -> None:
        for key in [k for k in os.environ if k.startswith(("ACCELERATE_", "FSDP_"))]:
            monkeypatch.delenv(key)
        for key, value in env.items():
            monkeypatch.setenv(key, value)

    return apply


def test_every_shipped_config_loads_with_accelerates_loader():
    from accelerate.commands.config.config_args import load_config_from_file

    assert {path.stem for path in ACCELERATE_DIR.glob("*.yaml")} == EXPECTED
    for name in EXPECTED:
        config = load_config_from_file(str(ACCELERATE_DIR / f"{name}.yaml"))
        assert config.compute_environment.value == "LOCAL_MACHINE", name
        assert (config.num_machines, config.machine_rank) == (1, 0), name  # the command line sets both


def test_a_config_with_an_unknown_key_is_refused(tmp_path):
    from accelerate.commands.config.config_args import load_config_from_file

    bad = tmp_path / "bad.yaml"
    bad.write_text((ACCELERATE_DIR / "deepspeed-zero2.yaml").read_text() + "zero_stag: 2\n")
    with pytest.raises(ValueError, match="unknown keys"):
        load_config_from_file(str(bad))


@pytest.mark.parametrize("name, stage, gather_16bit", [("deepspeed-zero2", 2, False), ("deepspeed-zero3", 3, True)])
def test_deepspeed_configs_launch_one_torchrun_per_machine(plugin_env, name, stage, gather_16bit):
    from accelerate.utils import DeepSpeedPlugin

    args, defaults = _launch_args(ACCELERATE_DIR / f"{name}.yaml")
    assert args.use_deepspeed and not args.use_fsdp and args.zero_stage == stage
    # "standard": each machine's own launcher (torchrun), not DeepSpeed's pdsh over ssh from machine 0
    assert defaults.deepspeed_config["deepspeed_multinode_launcher"] == "standard"
    env = _launch_env(args, defaults)
    assert (args.nproc_per_node, args.nnodes, args.node_rank, args.rdzv_endpoint) == ("2", "2", 1, "10.0.0.1:29555")
    assert env["ACCELERATE_USE_DEEPSPEED"] == "true" and env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == str(stage)
    plugin_env(env)
    plugin = DeepSpeedPlugin()
    zero = plugin.deepspeed_config["zero_optimization"]
    assert plugin.zero_stage == stage and zero["stage"] == stage
    assert zero["offload_optimizer"]["device"] == "none" and zero["offload_param"]["device"] == "none"
    assert zero["stage3_gather_16bit_weights_on_model_save"] is gather_16bit
    assert plugin.gradient_accumulation_steps == "auto"  # filled in from the trainer config by transformers


def test_fsdp_config_shards_with_fsdp2(plugin_env):
    from accelerate.utils import FullyShardedDataParallelPlugin

    args, defaults = _launch_args(ACCELERATE_DIR / "fsdp.yaml")
    assert args.use_fsdp and not args.use_deepspeed
    env = _launch_env(args, defaults)
    assert (args.nproc_per_node, args.nnodes, args.node_rank) == ("2", "2", 1)
    assert env["ACCELERATE_USE_FSDP"] == "true" and env["FSDP_VERSION"] == "2"
    plugin_env(env)
    plugin = FullyShardedDataParallelPlugin()
    assert plugin.fsdp_version == 2 and plugin.reshard_after_forward is True
    assert (
        plugin.state_dict_type.name == "FULL_STATE_DICT"
        and plugin.auto_wrap_policy.__name__ == "transformer_auto_wrap_policy"
    )


def test_cpu_config_joins_machines_through_torchrun():
    args, defaults = _launch_args(ACCELERATE_DIR / "cpu-2proc.yaml", machine_rank=0)
    assert args.multi_gpu and not args.use_deepspeed and not args.use_fsdp
    _launch_env(args, defaults)
    assert (args.nproc_per_node, args.nnodes, args.node_rank, args.rdzv_endpoint) == ("2", "2", 0, "10.0.0.1:29555")
