"""Online GRPO sampling with vLLM: the trainer config's `vllm` mapping and what it becomes in TRL's GRPOConfig.

    vllm: {mode: server, server_base_url: null, server_host: 127.0.0.1, server_port: 8000, server_timeout: 240,
           group_port: 51216, gpu_memory_utilization: 0.3, tensor_parallel_size: 1, max_model_length: null}

`mode: server` sends generation to a separate `trl vllm-serve` process (its own GPUs; the trainer pushes the updated
weights to it over an NCCL group on `group_port` after each step); `mode: colocate` runs a vLLM engine inside every
training process, on its GPU (`gpu_memory_utilization`, `tensor_parallel_size`). null: the policy's own `generate`.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from massgen_rl_common.config_args import UsageError

from .args import mapping_or_none

DEFAULTS: dict[str, Any] = {
    "mode": "server",
    "server_base_url": None,
    "server_host": "127.0.0.1",
    "server_port": 8000,
    "server_timeout": 240.0,
    "group_port": 51216,
    "gpu_memory_utilization": 0.3,
    "tensor_parallel_size": 1,
    "max_model_length": None,
}


def _int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(f"vllm.{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


def normalize_vllm(value: Any) -> dict[str, Any] | None:
    """The `vllm` mapping with defaults filled in and checked; None (or false) stays None."""
    value = mapping_or_none("vllm", value, DEFAULTS, "mode, server_host, server_port, ...")
    if value is None:
        return None
    v = {**DEFAULTS, **value}
    if v["mode"] not in ("server", "colocate"):
        raise UsageError(f"vllm.mode must be 'server' or 'colocate', got {v['mode']!r}")
    if v["server_base_url"] is not None:
        parsed = urllib.parse.urlparse(str(v["server_base_url"]))
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise UsageError(f"vllm.server_base_url must be an http(s) URL, got {v['server_base_url']!r}")
    if not isinstance(v["server_host"], str) or not v["server_host"]:
        raise UsageError(f"vllm.server_host must be a host name or address, got {v['server_host']!r}")
    for name in ("server_port", "group_port"):
        _int(name, v[name], 1, 65535)
    _int("tensor_parallel_size", v["tensor_parallel_size"], 1, 1024)
    if v["max_model_length"] is not None:
        _int("max_model_length", v["max_model_length"], 1, 1 << 20)
    for name, high in (("gpu_memory_utilization", 1.0), ("server_timeout", 7 * 24 * 3600.0)):
        number = v[name]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number <= high:
            raise UsageError(f"vllm.{name} must be a number in (0, {high:g}], got {number!r}")
    return v


def check_vllm_run(vllm: dict[str, Any] | None, mode: str, cpu_only: bool, processes: int) -> None:
    """vLLM only samples (online mode), on CUDA GPUs, with colocated engines that split the processes evenly."""
    if vllm is None:
        return
    if mode != "online":
        raise UsageError("vllm generates samples, which only mode 'online' does (offline replays recorded ones)")
    if cpu_only:
        raise UsageError("vllm needs CUDA GPUs, but train.gpus is none")
    if vllm["mode"] == "colocate" and processes % vllm["tensor_parallel_size"]:
        raise UsageError(
            f"vllm.tensor_parallel_size ({vllm['tensor_parallel_size']}): colocated engines split the "
            f"{processes} training process(es) into groups of it, so use a divisor of {processes}"
        )


def grpo_vllm_kwargs(vllm: dict[str, Any] | None) -> dict[str, Any]:
    """GRPOConfig keyword arguments for a normalized `vllm` mapping (use_vllm False when None)."""
    if vllm is None:
        return {"use_vllm": False}
    return {
        "use_vllm": True,
        "vllm_mode": vllm["mode"],
        "vllm_server_base_url": vllm["server_base_url"],
        "vllm_server_host": vllm["server_host"],
        "vllm_server_port": vllm["server_port"],
        "vllm_server_timeout": float(vllm["server_timeout"]),
        "vllm_group_port": vllm["group_port"],
        "vllm_gpu_memory_utilization": float(vllm["gpu_memory_utilization"]),
        "vllm_tensor_parallel_size": vllm["tensor_parallel_size"],
        "vllm_max_model_length": vllm["max_model_length"],
    }
