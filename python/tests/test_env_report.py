"""env_report: one done event with the documented shape, in a few seconds."""

from __future__ import annotations

import sys

from conftest import run_module

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


def test_env_report_without_cuda_probe():
    run = run_module("massgen_rl_common.env_report", "--no-cuda")
    assert run.returncode == 0
    assert run.last["cuda"] == {"available": False, "device_count": 0, "devices": [], "via": "torch", "skipped": True}


def test_env_report_survives_a_broken_torch(tmp_path):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('simulated broken torch')\n")
    run = run_module("massgen_rl_common.env_report", path_before=tmp_path)
    assert run.returncode == 0, run.stderr
    cuda = run.last["cuda"]
    assert cuda["available"] is False and cuda["devices"] == []
    assert "simulated broken torch" in cuda["torch_error"]
