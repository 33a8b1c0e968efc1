"""What this CPU can do for training and serving: its model, the cores this process may use, the instruction sets
that matter here (AVX2, AVX-512, AVX512-BF16, AMX), and whether it computes bf16 natively, which decides what
`train.bf16: auto` trains in (bf16 autocast, or float32: about 2x slower a DPO step on the bundled model)."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def parse_cpuinfo(text: str) -> tuple[str | None, set[str]]:
    """The first processor's model name and flags in /proc/cpuinfo's text."""
    model, flags = None, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return model, flags


def cpu_bf16() -> bool:
    """A CPU with bf16 instructions (AVX512-BF16 or AMX), as torch sees it: autocast there runs the matrix products
    about 1.5x faster than float32 (measured on the bundled model's SFT); without them bf16 is emulated, and slower."""
    import torch

    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    try:
        return any(getattr(torch.cpu, name, lambda: False)() for name in probes)
    except Exception:  # private probes: an older or newer torch without them counts as no
        return False


def cpu_report(probe_torch: bool = True, cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """{arch, model, cores, flags: {name: bool} (Linux), bf16_native, bf16_via: torch | flags}."""
    model, flags = parse_cpuinfo(cpuinfo.read_text(errors="replace")) if cpuinfo.is_file() else (None, set())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    report: dict[str, Any] = {
        "arch": platform.machine(),
        "model": model,
        "cores": cores,
        "flags": {name: name in flags for name in FLAGS} if flags else None,
    }
    if probe_torch:
        try:
            report["bf16_native"], report["bf16_via"] = cpu_bf16(), "torch"
            return report
        except Exception:  # no working torch: the flags say it
            pass
    report["bf16_native"] = bool(flags & {"avx512_bf16", "amx_bf16"})
    report["bf16_via"] = "flags"
    return report
