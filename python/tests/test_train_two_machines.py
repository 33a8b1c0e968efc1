"""Two "machines" on loopback: two separate `accelerate launch` process trees (machine ranks 0 and 1, one CPU process
each, gloo) train one real SFT run on the tiny model as one process group, or both stop before the first step when
machine 1 built other data; and that check itself (every process trains on rank 0's data, settings and weights)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import PYTHON_DIR, ScriptRun
from train_helpers import (
    SFT_ROWS,
    assert_trained,
    free_port,
    needs_model,
    run_trainer_module,
    train_config,
    write_jsonl,
)

ENV = {**os.environ, "PYTHONPATH": str(PYTHON_DIR), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _launch(machine_rank: int, config: Path, port: int) -> subprocess.Popen:
    """`accelerate launch` as src/trainers/launch.ts builds it for 2 processes over 2 machines."""
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--main_process_port",
        str(port),
        "--num_processes",
        "2",
        "--config_file",
        str(PYTHON_DIR / "accelerate" / "cpu-2proc.yaml"),
        "--num_machines",
        "2",
        "--machine_rank",
        str(machine_rank),
        "--main_process_ip",
        "127.0.0.1",
        "-m",
        "massgen_rl_training.sft",
        "--config",
        str(config),
    ]
    with open(config.with_suffix(".stderr"), "w") as stderr:
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env=ENV,
            start_new_session=True,
        )


def _finish(proc: subprocess.Popen, config: Path, started: float) -> ScriptRun:
    out, _ = proc.communicate(timeout=600)
    return ScriptRun(
        proc.returncode,
        [json.loads(line) for line in out.splitlines()],
        config.with_suffix(".stderr").read_text(),
        time.monotonic() - started,
    )


def _adapter(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


@needs_model
def test_two_machines_on_loopback_form_one_process_group(tmp_path):
    configs = {}
    for rank in (0, 1):  # each machine: its own folder, its own copy of the dataset, its own trainer config
        home = tmp_path / f"machine{rank}"
        home.mkdir()
        dataset = write_jsonl(home / "data.jsonl", SFT_ROWS)
        configs[rank] = train_config(
            home, "sft", dataset, per_device_train_batch_size=1, max_steps=-1, num_train_epochs=1, max_length=48
        )
    port = free_port()
    started = time.monotonic()
    procs = {rank: _launch(rank, configs[rank], port) for rank in (1, 0)}  # the worker may start first
    main, worker = _finish(procs[0], configs[0], started), _finish(procs[1], configs[1], started)
    print(f"\ntwo machines: {main.seconds:.1f}s", file=sys.stderr)

    # 4 rows, 1 per process and step, 2 processes: 2 steps, each on both machines' rows
    done = assert_trained(main, 2)
    assert done["metrics"]["processes"] == 2 and done["metrics"]["machines"] == 2
    assert main.of("progress")[-2]["processes"] == 2 and main.of("progress")[-2]["machines"] == 2
    # machine 1 speaks no protocol (machine 0 records the run), exits with machine 0's success, and logs its steps
    assert worker.returncode == 0, worker.stderr[-4000:]
    assert worker.events == []
    echoed = [
        json.loads(line.split("] ", 1)[1]) for line in worker.stderr.splitlines() if line.startswith("[machine 1] ")
    ]
    worker_steps = [e for e in echoed if e["event"] == "step"]
    assert [e["step"] for e in worker_steps] == [1, 2]
    assert not (tmp_path / "machine1" / "out-sft" / "final").exists()
    # the gradients were all-reduced: both machines clipped the same gradient norm at every step, though each
    # back-propagated other rows ...
    main_steps = main.of("step")
    for ours, theirs in zip(main_steps, worker_steps):
        assert ours["metrics"]["grad_norm"] == pytest.approx(theirs["metrics"]["grad_norm"], rel=1e-6)
    # ... and it is the gradient of both rows together: one process with batches of 2 takes the same steps
    reference_config = train_config(
        tmp_path,
        "one-machine",
        tmp_path / "machine0" / "data.jsonl",
        per_device_train_batch_size=2,
        max_steps=-1,
        num_train_epochs=1,
        max_length=48,
    )
    reference = run_trainer_module("sft", reference_config)
    reference_done = assert_trained(reference, 2)
    for ours, alone in zip(main_steps, reference.of("step")):
        assert ours["metrics"]["grad_norm"] == pytest.approx(alone["metrics"]["grad_norm"], rel=1e-3)
        assert ours["loss"] == pytest.approx(alone["loss"], rel=1e-3)
    # The adapters agree to a tenth of one learning-rate step (1e-4): AdamW amplifies float noise in the tiniest
    # gradients, but a machine that trained on its own rows would be off by whole steps.
    trained, alone = _adapter(Path(done["path"])), _adapter(Path(reference_done["path"]))
    assert trained.keys() == alone.keys()
    for key in trained:
        assert (trained[key] - alone[key]).abs().max().item() < 1e-5, key


@needs_model
def test_when_machine_1_built_other_data_both_machines_fail_before_the_first_step(tmp_path):
    configs = {}
    for rank, rows in ((0, SFT_ROWS), (1, SFT_ROWS[:3])):  # machine 1's copy of the traces is older
        home = tmp_path / f"machine{rank}"
        home.mkdir()
        configs[rank] = train_config(
            home, "sft", write_jsonl(home / "data.jsonl", rows), per_device_train_batch_size=1, max_length=48
        )
    port = free_port()
    started = time.monotonic()
    procs = {rank: _launch(rank, configs[rank], port) for rank in (0, 1)}
    main, worker = _finish(procs[0], configs[0], started), _finish(procs[1], configs[1], started)
    assert main.returncode == 1 and worker.returncode == 1
    assert main.of("step") == [] and main.last["event"] == "error"
    assert main.last["message"].startswith("rank 1 (machine 1) would train on something else than rank 0: the dataset")
    assert "rank 1 (machine 1) would train on something else than rank 0" in worker.stderr
    assert worker.events == [{"event": "error", "rank": 1, "message": main.last["message"], "rank_differs": 1}]


AGREE = textwrap.dedent("""
    import os, sys, json
    import torch.distributed as dist
    from massgen_rl_common.protocol import ScriptError
    from massgen_rl_training.agree import require_same_run
    from massgen_rl_training.sft import SFTArgs

    dist.init_process_group("gloo")
    spec = json.loads(sys.argv[1])
    args = SFTArgs(model_path=spec["model"], output_dir=spec["out"], dataset_path=spec["data"],
                   learning_rate=spec.get("lr", 1e-5))
    try:
        require_same_run(args)
        print("same")
    except ScriptError as exc:
        print("differs:", exc)
    dist.destroy_process_group()
""")


def _agree(tmp_path: Path, specs: list[dict]) -> list[str]:
    port = free_port()
    procs = []
    for rank, spec in enumerate(specs):
        env = {
            **ENV,
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "LOCAL_RANK": "0",
            "GROUP_RANK": str(rank),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", AGREE, json.dumps(spec)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    outs = [proc.communicate(timeout=120) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), [err[-2000:] for _, err in outs]
    return [out.strip() for out, _ in outs]


def test_every_process_checks_it_trains_on_what_rank_0_does(tmp_path):
    folders = {}
    for rank in (0, 1):  # two machines' copies: other paths, same contents
        home = tmp_path / f"m{rank}"
        (home / "model").mkdir(parents=True)
        (home / "model" / "adapter_model.safetensors").write_bytes(b"adapter weights")
        (home / "model" / "config.json").write_text(f'{{"created_on": "machine {rank}"}}')
        folders[rank] = {
            "model": str(home / "model"),
            "out": str(home / "out"),
            "data": str(write_jsonl(home / "data.jsonl", SFT_ROWS)),
        }
    assert _agree(tmp_path, [folders[0], folders[1]]) == ["same", "same"]

    write_jsonl(Path(folders[1]["data"]), SFT_ROWS[:3])  # machine 1's store copy was older: fewer traces
    results = _agree(tmp_path, [folders[0], {**folders[1], "lr": 1e-4}])
    for result in results:  # every rank stops, each with the reason
        assert result.startswith("differs: rank 1 (machine 1) would train on something else than rank 0: the dataset")
        assert "learning_rate (0.0001 on rank 1, 1e-05 on rank 0)" in result
    write_jsonl(Path(folders[1]["data"]), SFT_ROWS)
    (Path(folders[1]["model"]) / "adapter_model.safetensors").write_bytes(b"other adapter")
    assert _agree(tmp_path, [folders[0], folders[1]])[1].endswith(
        "the start weights' files. Every machine must build the same run: the same traces (a copy of machine 0's "
        "store), config and train flags"
    )
