"""SFT with LoRA on the tiny model (CPU): events, a servable adapter, stop-and-resume, and a 2-process run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import PYTHON_DIR, ScriptRun, run_module
from train_helpers import (  # noqa: F401
    SFT_ROWS,
    assert_trained,
    generate_with,
    needs_model,
    sft_adapter,
    train_config,
    write_jsonl,
)

ENV = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@needs_model
def test_sft_lora_adapter_loads_and_generates(sft_adapter):
    done = sft_adapter["done"]
    step = sft_adapter["run"].of("step")[0]
    assert step["reward"] is None and step["kl"] is None
    manifest = json.loads((Path(done["path"]) / "massgen-rl-train.json").read_text())
    assert manifest["algo"] == "sft" and manifest["adapter"] is True and manifest["global_step"] == 2
    generate_with(done["path"])  # transformers + peft load it and decode
    assert not list(Path(done["path"]).parent.glob("checkpoint-*"))  # save_steps 0: no periodic checkpoints


def _start(algo: str, config: Path, *extra: str) -> subprocess.Popen:
    """stderr goes to a file next to the config (a pipe nobody reads could fill up and block the trainer)."""
    with open(config.with_suffix(".stderr"), "w") as stderr:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", f"massgen_rl_training.{algo}", "--config", str(config), *extra],
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env=ENV,
        )


@needs_model
def test_sigint_saves_a_checkpoint_exits_130_and_resume_finishes(tmp_path):
    dataset = write_jsonl(tmp_path / "data.jsonl", SFT_ROWS)
    config = train_config(tmp_path, "stop", dataset, max_steps=5, per_device_train_batch_size=1, max_length=48)
    started = time.monotonic()
    proc = _start("sft", config)
    events = []
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        events.append(event)
        if event["event"] == "step" and event["step"] == 1:
            proc.send_signal(signal.SIGINT)
    returncode = proc.wait(timeout=300)
    assert returncode == 130, config.with_suffix(".stderr").read_text()[-4000:]
    print(f"\nsft stop: {time.monotonic() - started:.1f}s", file=sys.stderr)
    kinds = [e["event"] for e in events]
    assert "done" not in kinds and "error" not in kinds, events
    checkpoint = [e for e in events if e["event"] == "checkpoint"][-1]
    assert checkpoint["stopping"] is True and 1 <= checkpoint["step"] < 5
    assert events[-1]["event"] == "progress" and events[-1]["stage"] == "stopped"
    assert events[-1]["checkpoint"] == checkpoint["path"]
    folder = Path(checkpoint["path"])
    assert folder.name == f"checkpoint-{checkpoint['step']}"
    for name in ("trainer_state.json", "optimizer.pt", "scheduler.pt", "adapter_model.safetensors"):
        assert (folder / name).is_file(), name

    started = time.monotonic()
    proc = _start("sft", config, "--resume-from-checkpoint", str(folder))
    out, _ = proc.communicate(timeout=600)
    err = config.with_suffix(".stderr").read_text()
    resumed = ScriptRun(
        proc.returncode, [json.loads(line) for line in out.splitlines()], err, time.monotonic() - started
    )
    print(f"sft resume: {resumed.seconds:.1f}s", file=sys.stderr)
    assert resumed.returncode == 0, err[-4000:]
    steps = [e["step"] for e in resumed.of("step")]
    assert steps == list(range(checkpoint["step"] + 1, 6)), resumed.events
    assert resumed.last["event"] == "done" and resumed.last["metrics"]["global_step"] == 5
    assert resumed.of("progress")[-2]["resume_from_checkpoint"] == str(folder.resolve())


@needs_model
def test_max_train_seconds_ends_training_normally_with_the_final_adapter(tmp_path):
    dataset = write_jsonl(tmp_path / "data.jsonl", SFT_ROWS)
    # 50 steps would take minutes; a budget of a millisecond ends the loop after its first step
    config = train_config(
        tmp_path, "budget", dataset, max_steps=50, per_device_train_batch_size=1, max_length=48, max_train_seconds=0.001
    )
    run = run_module("massgen_rl_training.sft", "--config", str(config))
    assert run.returncode == 0, run.stderr[-4000:]
    assert [e["step"] for e in run.of("step")] == [1]
    budget = [e for e in run.of("progress") if e["stage"] == "budget"]
    assert len(budget) == 1 and budget[0]["step"] == 1
    assert run.last["event"] == "done"
    assert run.last["metrics"]["global_step"] == 1 and run.last["metrics"]["budget_reached"] is True
    assert (Path(run.last["path"]) / "adapter_model.safetensors").is_file()


def test_max_train_seconds_must_be_positive(tmp_path):
    dataset = write_jsonl(tmp_path / "data.jsonl", SFT_ROWS)
    run = run_module(
        "massgen_rl_training.sft", "--config", str(train_config(tmp_path, "bad", dataset, max_train_seconds=0))
    )
    assert run.returncode == 2
    assert "max_train_seconds must be positive and at most a week" in run.of("error")[0]["message"]
