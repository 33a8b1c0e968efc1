"""The trainers' runner without training: the stop outcome (exit 130), a second signal, and events from rank 0 only."""

from __future__ import annotations

import json
from pathlib import Path

from massgen_rl_common.protocol import ScriptError, progress
from massgen_rl_training.runner import run_trainer
from massgen_rl_training.sft import SFTArgs
from massgen_rl_training.stop import Stopped
from train_helpers import SFT_ROWS, write_jsonl


def _config(tmp_path: Path) -> list[str]:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    dataset = write_jsonl(tmp_path / "data.jsonl", SFT_ROWS)
    config = tmp_path / "train.yaml"
    config.write_text(
        json.dumps({"model_path": str(model), "output_dir": str(tmp_path / "out"), "dataset_path": str(dataset)})
    )
    return ["--config", str(config)]


def _events(capfd) -> list[dict]:
    return [json.loads(line) for line in capfd.readouterr().out.splitlines()]


def test_a_stop_checkpoint_exits_130_with_a_stopped_progress_event(tmp_path, capfd):
    def stopped(args: SFTArgs) -> dict:
        raise Stopped(str(tmp_path / "out" / "checkpoint-1"))

    assert run_trainer(stopped, SFTArgs, _config(tmp_path)) == 130
    events = _events(capfd)
    assert [(e["event"], e.get("stage")) for e in events] == [("progress", "stopped")]
    assert events[0]["checkpoint"] == str(tmp_path / "out" / "checkpoint-1")


def test_a_second_signal_exits_1_without_a_checkpoint(tmp_path, capfd):
    def interrupted(args: SFTArgs) -> dict:
        raise KeyboardInterrupt("second SIGINT")

    assert run_trainer(interrupted, SFTArgs, _config(tmp_path)) == 1
    assert _events(capfd) == [
        {"event": "error", "message": "interrupted twice: stopped without saving a checkpoint", "kind": "interrupted"}
    ]


def test_only_rank_0_speaks_and_other_ranks_tag_their_errors(tmp_path, capfd, monkeypatch):
    def failing(args: SFTArgs) -> dict:
        progress("load", "loading")
        raise ScriptError("out of memory")

    monkeypatch.setenv("RANK", "1")
    assert run_trainer(failing, SFTArgs, _config(tmp_path)) == 1
    assert _events(capfd) == [{"event": "error", "rank": 1, "message": "out of memory"}]
    monkeypatch.setenv("RANK", "0")
    assert run_trainer(lambda args: {"path": "final"}, SFTArgs, _config(tmp_path)) == 0
    assert _events(capfd) == [{"event": "done", "path": "final"}]


def test_the_first_process_of_another_machine_logs_its_events(tmp_path, capfd, monkeypatch):
    def steps(args: SFTArgs) -> dict:
        progress("train", "training")
        return {"path": "final"}

    for key, value in {"RANK": "2", "LOCAL_RANK": "0", "GROUP_RANK": "1"}.items():
        monkeypatch.setenv(key, value)
    assert run_trainer(steps, SFTArgs, _config(tmp_path)) == 0
    out = capfd.readouterr()
    assert out.out == ""  # machine 0 records the run: nothing on the protocol stream
    assert [line for line in out.err.splitlines() if line.startswith("[machine 1]")] == [
        '[machine 1] {"event": "progress", "stage": "train", "message": "training"}',
        '[machine 1] {"event": "done", "path": "final"}',
    ]
    monkeypatch.setenv("LOCAL_RANK", "1")  # its other processes stay quiet, like every rank but 0 on machine 0
    assert run_trainer(steps, SFTArgs, _config(tmp_path)) == 0
    out = capfd.readouterr()
    assert out.out == "" and "[machine" not in out.err
