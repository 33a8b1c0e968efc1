"""Report the Python environment the trainers run in: one `done` event, no progress.

    python -m massgen_rl_common.env_report [--no-cuda] [--config FILE]

Package versions come from installed metadata (nothing is imported for them); CUDA is probed
through torch, imported inside a try so that a broken torch is reported rather than fatal.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from .cpu import cpu_report
from .protocol import run_script

PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "gguf")


@dataclass
class EnvReportArgs:
    """Print the Python, package and CUDA facts of this environment as one JSON `done` event."""

    cuda: bool = field(
        default=True,
        metadata={
            "help": "Probe CUDA and the CPU's bf16 by importing torch; --no-cuda skips the import (CUDA reported "
            "unavailable, bf16 read from the CPU's flags)."
        },
    )


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed distribution versions, or None for the ones missing."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cuda_report(probe: bool = True) -> dict[str, Any]:
    """{available, device_count, devices: [{name, total_memory_bytes}], via: "torch"} (+ torch_error)."""
    report: dict[str, Any] = {"available": False, "device_count": 0, "devices": [], "via": "torch"}
    if not probe:
        report["skipped"] = True
        return report
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken native library
        report["torch_error"] = f"{type(exc).__name__}: {exc}"
        return report
    report["torch_cuda_version"] = torch.version.cuda
    try:
        if torch.cuda.is_available():
            count = torch.cuda.device_count()
            report["available"] = count > 0
            report["device_count"] = count
            for index in range(count):
                props = torch.cuda.get_device_properties(index)
                report["devices"].append({"name": props.name, "total_memory_bytes": int(props.total_memory)})
    except Exception as exc:  # driver present but unusable
        report["available"] = False
        report["cuda_error"] = f"{type(exc).__name__}: {exc}"
    return report


def main(args: EnvReportArgs) -> dict[str, Any]:
    return {
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "packages": package_versions(),
        "cuda": cuda_report(args.cuda),
        "cpu": cpu_report(args.cuda),
    }


if __name__ == "__main__":
    raise SystemExit(run_script(main, EnvReportArgs, prog="massgen_rl_common.env_report"))
