"""env_report: one done event with the documented shape, in a few seconds."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import run_module
from massgen_rl_common.cpu import FLAGS, cpu_report, parse_cpuinfo

PACKAGES = {"torch", "transformers", "trl", "peft", "accelerate", "datasets", "gguf"}


def test_env_report_shape():
    run = run_module("massgen_rl_common.env_report")
    assert run.returncode == 0, run.stderr
    assert len(run.events) == 1
    report = run.last
    assert report["event"] == "done"
    assert report["python_version"] == "{}.{}.{}".format(*sys.version_info[:3])
    assert report["python_executable"] and report["platform"]
    assert set(report["packages"]) == PACKAGES
    assert all(value is None or isinstance(value, str) for value in report["packages"].values())
    assert report["packages"]["torch"] is not None  # the test venv has the pinned deps

    cuda = report["cuda"]
    assert cuda["via"] == "torch"
    assert isinstance(cuda["available"], bool) and isinstance(cuda["device_count"], int)
    assert len(cuda["devices"]) == cuda["device_count"] if cuda["available"] else cuda["devices"] == []
    for device in cuda["devices"]:
        assert isinstance(device["name"], str) and device["total_memory_bytes"] > 0
    assert "torch_error" not in cuda
    assert run.seconds < 30

    cpu = report["cpu"]
    assert cpu["arch"] and cpu["cores"] >= 1 and cpu["bf16_via"] == "torch" and isinstance(cpu["bf16_native"], bool)
    if Path("/proc/cpuinfo").is_file():
        assert set(cpu["flags"]) == set(FLAGS) and cpu["model"]
        # torch's probe and the CPU's flags agree on what the CPU computes natively
        assert cpu["bf16_native"] == (cpu["flags"]["avx512_bf16"] or cpu["flags"]["amx_bf16"])


def test_env_report_without_cuda_probe():
    run = run_module("massgen_rl_common.env_report", "--no-cuda")
    assert run.returncode == 0
    assert run.last["cuda"] == {"available": False, "device_count": 0, "devices": [], "via": "torch", "skipped": True}
    assert run.last["cpu"]["bf16_via"] == "flags"


CPUINFO = """processor\t: 0
model name\t: AMD EPYC 7B12
flags\t\t: fpu sse2 avx avx2 fma avx512f
power management:

processor\t: 1
model name\t: AMD EPYC 7B12
flags\t\t: fpu sse2 avx avx2 fma avx512f
"""


def test_cpu_report_reads_the_flags_without_torch(tmp_path):
    assert parse_cpuinfo(CPUINFO) == ("AMD EPYC 7B12", {"fpu", "sse2", "avx", "avx2", "fma", "avx512f"})
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    report = cpu_report(probe_torch=False, cpuinfo=tmp_path / "cpuinfo")
    assert report["model"] == "AMD EPYC 7B12" and report["bf16_native"] is False and report["bf16_via"] == "flags"
    assert report["flags"] == {
        "avx2": True,
        "avx512f": True,
        "avx512_bf16": False,
        "amx_bf16": False,
        "amx_tile": False,
    }
    (tmp_path / "cpuinfo").write_text(CPUINFO.replace("avx512f", "avx512f avx512_bf16"))
    assert cpu_report(probe_torch=False, cpuinfo=tmp_path / "cpuinfo")["bf16_native"] is True
    assert cpu_report(probe_torch=False, cpuinfo=tmp_path / "none")["flags"] is None


def test_env_report_survives_a_broken_torch(tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('simulated broken torch')\n")
    run = run_module("massgen_rl_common.env_report", path_before=tmp_path)
    assert run.returncode == 0, run.stderr
    cuda = run.last["cuda"]
    assert cuda["available"] is False and cuda["devices"] == []
    assert "simulated broken torch" in cuda["torch_error"]
    assert run.last["cpu"]["bf16_via"] == "flags"  # no torch: the CPU's flags say whether it computes bf16
